//! Link settings napi-rs needs for a Node add-on.
fn main() {
    napi_build::setup();
}
