//! The layout's promise (README "Layout"): each folder of `src/` is a layer, and a layer names
//! only the layers below it. A `crate::<layer>` path in a lower layer fails this test.

use std::path::Path;

/// The layers, lowest first.
const LAYERS: [&str; 7] = ["event", "read", "dialect", "normalize", "sink", "view", "cli"];

fn rank(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == name)
}

/// `(file, line, from, to)` for every path that names a higher layer.
fn upward_paths(src: &Path) -> Vec<(String, usize, &'static str, &'static str)> {
    let mut found = Vec::new();
    for layer in LAYERS {
        let me = rank(layer).unwrap();
        let mut stack = vec![src.join(layer)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    for (at, _) in line.match_indices("crate::") {
                        let rest = &line[at + "crate::".len()..];
                        let word: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if let Some(to) = rank(&word).filter(|&to| to > me) {
                            found.push((path.display().to_string(), n + 1, layer, LAYERS[to]));
                        }
                    }
                }
            }
        }
    }
    found
}

#[test]
fn no_layer_names_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let up = upward_paths(&src);
    assert!(up.is_empty(), "imports running up a layer: {up:#?}");
}

#[test]
fn the_check_sees_an_upward_path() {
    let dir = std::env::temp_dir().join(format!("agentnorm-layers-{}", std::process::id()));
    for layer in LAYERS {
        std::fs::create_dir_all(dir.join(layer)).unwrap();
    }
    std::fs::write(dir.join("read").join("x.rs"), "use crate::normalize::Fold;\nuse crate::event::Event;\n").unwrap();
    let up = upward_paths(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!((up[0].1, up[0].2, up[0].3), (1, "read", "normalize"));
}
