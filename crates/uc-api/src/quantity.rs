//! Kubernetes resource quantities (`500m`, `2`, `64Mi`, `1e3`) read as apimachinery's
//! `ParseQuantity` reads them, with its errors: a number, then one suffix — binary (`Ki` … `Ei`),
//! decimal (`n` `u` `m` `k` `M` `G` `T` `P` `E`) or a decimal exponent (`e3`, `E-2`).

/// Why a string is not a quantity, in apimachinery's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not a number followed by suffix characters.
    #[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    Format,
    /// No digit before the suffix.
    #[error("quantity must have at least one number")]
    NoNumber,
    /// Suffix characters that are not a suffix.
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// The value of a quantity (cores, bytes, …) as a float: close enough to compare requests with
/// limits, as `Quantity.Cmp` does.
pub fn parse(s: &str) -> Result<f64, QuantityError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits = |t: &str| t.bytes().take_while(u8::is_ascii_digit).count();
    let whole = digits(unsigned);
    let mut number_end = whole;
    if unsigned[whole..].starts_with('.') {
        number_end += 1 + digits(&unsigned[whole + 1..]);
    }
    let (number, rest) = unsigned.split_at(number_end);
    let suffix_letters = rest.bytes().take_while(|b| b"eEinumkKMGTP".contains(b)).count();
    let after_letters = &rest[suffix_letters..];
    let exponent = after_letters.strip_prefix(['+', '-']).unwrap_or(after_letters);
    if digits(exponent) != exponent.len() {
        return Err(QuantityError::Format);
    }
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return Err(QuantityError::NoNumber);
    }
    let multiplier = multiplier(rest).ok_or(QuantityError::Suffix)?;
    let value: f64 = number.parse().map_err(|_| QuantityError::NoNumber)?;
    Ok(if s.starts_with('-') { -value * multiplier } else { value * multiplier })
}

fn multiplier(suffix: &str) -> Option<f64> {
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let decimal =
        [("n", -9), ("u", -6), ("m", -3), ("", 0), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];
    if let Some(i) = binary.iter().position(|b| *b == suffix) {
        return Some(1024f64.powi(i as i32 + 1));
    }
    if let Some((_, e)) = decimal.iter().find(|(d, _)| *d == suffix) {
        return Some(10f64.powi(*e));
    }
    let exponent = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty())?;
    exponent.parse::<i32>().ok().map(|e| 10f64.powi(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_apimachinery_reads_them() {
        for (q, v) in [
            ("1", 1.0),
            ("500m", 0.5),
            ("64Mi", 64.0 * 1024.0 * 1024.0),
            ("1G", 1e9),
            ("1e3", 1000.0),
            ("1E-2", 0.01),
            ("+2", 2.0),
            ("-1", -1.0),
            ("1.5Gi", 1.5 * 1024f64.powi(3)),
            (".5", 0.5),
            ("2.", 2.0),
            (" 3 ", 3.0),
        ] {
            assert_eq!(parse(q), Ok(v), "{q}");
        }
        for (q, e) in [
            ("", QuantityError::Format),
            ("lots", QuantityError::Format),
            ("1 Gi", QuantityError::Format),
            ("1.2.3", QuantityError::Format),
            ("1KiB", QuantityError::Format),
            ("Gi", QuantityError::NoNumber),
            (".", QuantityError::NoNumber),
            ("1Kb", QuantityError::Format),
            ("1mi", QuantityError::Suffix),
            ("1e", QuantityError::Suffix),
            ("1kM", QuantityError::Suffix),
        ] {
            assert_eq!(parse(q), Err(e), "{q}");
        }
    }
}
