//! Gives the build an identity of its sources (`AGENTNORM_SOURCE_HASH`): the usage cache is
//! kept only by the build that wrote it, so a changed reader never reuses what an older one
//! collected, even under the same version number.

use std::hash::{Hash as _, Hasher as _};
use std::path::Path;

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, files);
        } else {
            files.push(p);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=Cargo.lock");
    let mut files = vec!["Cargo.toml".into(), "Cargo.lock".into()];
    walk(Path::new("src"), &mut files);
    files.sort();
    let mut h = std::hash::DefaultHasher::new();
    for f in &files {
        f.hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    println!("cargo:rustc-env=AGENTNORM_SOURCE_HASH={:016x}", h.finish());
}
