//! The drop-in library's settings: the `hetblas` crate's [`Settings`], read from the
//! environment once, on first use. A program that preloads the library must run whatever its
//! environment says, so a value that cannot be used is one line on stderr (naming the
//! variable, the value and why) and the default, where the library and the command refuse.

use hetblas::Settings;
use std::sync::OnceLock;

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// The settings, read on the first call that needs one.
pub fn settings() -> &'static Settings {
    SETTINGS.get_or_init(|| {
        let (settings, errors) = Settings::read_env();
        for e in errors {
            eprintln!("hetblas: {e}; using the default");
        }
        for note in &settings.retired {
            eprintln!("hetblas: {note}");
        }
        settings
    })
}

/// The settings when a call has read them already, without reading: `None` before then.
#[inline]
pub fn read_already() -> Option<&'static Settings> {
    SETTINGS.get()
}
