//! `docs/configuration.md` is the current rendering of the key catalogue.
//!
//! Mental model: the reference is generated ([`skiff_config::reference::render_reference`]);
//! a key added, removed or changed in `crates/config/src/keys/` without regenerating the file
//! fails here with the command that fixes it.

use skiff_config::reference::{REFERENCE_PATH, REGENERATE, render_reference};

#[test]
fn configuration_reference_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(REFERENCE_PATH);
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    let rendered = render_reference();
    if on_disk != rendered {
        let first = on_disk
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || on_disk.lines().count().min(rendered.lines().count()) + 1,
                |i| i + 1,
            );
        panic!(
            "{} differs from the key catalogue (first difference at line {first}); regenerate it with `{REGENERATE}`",
            path.display()
        );
    }
}
