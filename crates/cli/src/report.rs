//! Where a command's report goes: text lines on stdout, or with `--json` one JSON object of
//! the report's fields, printed at the end, and no text.

use std::cell::RefCell;

/// A report being written.
pub struct Out {
    json: bool,
    fields: RefCell<serde_json::Map<String, serde_json::Value>>,
}

/// A line of text (nothing with `--json`).
macro_rules! say {
    ($out:expr, $($t:tt)*) => { $out.line(format_args!($($t)*)) };
}
pub(crate) use say;

impl Out {
    pub fn new(json: bool) -> Self {
        Out {
            json,
            fields: RefCell::default(),
        }
    }

    /// Prints a line of the text form.
    pub fn line(&self, text: std::fmt::Arguments<'_>) {
        if !self.json {
            println!("{text}");
        }
    }

    /// Sets a field of the JSON form.
    pub fn set(&self, key: &str, value: impl Into<serde_json::Value>) {
        self.fields
            .borrow_mut()
            .insert(key.to_string(), value.into());
    }

    /// Appends `value` to the array field `key` (made empty first where it is not there).
    pub fn push(&self, key: &str, value: serde_json::Value) {
        let mut fields = self.fields.borrow_mut();
        let entry = fields
            .entry(key.to_string())
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let serde_json::Value::Array(v) = entry {
            v.push(value);
        }
    }

    /// Prints the JSON form (with `--json`).
    pub fn finish(self) {
        if self.json {
            let v = serde_json::Value::Object(self.fields.into_inner());
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
    }
}

/// A median of positive times (the upper one of an even count); NaN for none.
pub fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}
