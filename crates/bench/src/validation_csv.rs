//! The CSV `validate` writes, read back by `plot-validation` and `validate --rescore`.

use hetblas_core::Blocking;

/// Splits a CSV line on commas outside double quotes.
pub fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().expect("starts non-empty").push(c),
        }
    }
    out
}

/// `blocking:seconds` pairs separated by spaces (the `sweep` and `model` columns).
///
/// # Errors
/// A pair that is not a blocking and a number.
pub fn points(s: &str) -> Result<Vec<(Blocking, f64)>, String> {
    s.split_whitespace()
        .map(|p| {
            let (t, v) = p.split_once(':').ok_or(format!("bad point {p:?}"))?;
            Ok((
                t.parse::<Blocking>()?,
                v.parse::<f64>()
                    .map_err(|e| format!("bad point {p:?}: {e}"))?,
            ))
        })
        .collect()
}

/// The `q` quantile (nearest rank) of `v`; NaN when empty.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_validate_writes() {
        let f = fields(r#"4096,f64,"1024:0.00833 4096x512x8192/g1:0.0421",x"#);
        assert_eq!(f.len(), 4);
        let p = points(&f[2]).unwrap();
        assert_eq!(p[0], (Blocking::square(1024), 0.00833));
        assert_eq!(p[1].0.to_string(), "4096x512x8192/g1");
        assert!(points("1024").is_err() && points("x:1").is_err());
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 0.5), 2.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
