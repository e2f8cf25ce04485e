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

/// A quantity in thousandths, exactly and rounded up as apimachinery's `MilliValue` rounds (`0.1m` is
/// 1, `1.5Gi` is 1,610,612,736,000); one too large for an `i128` saturates. The figure kube's LimitRanger
/// and QoS classes compare and add.
pub fn milli(s: &str) -> Result<i128, QuantityError> {
    parse(s)?;
    let s = s.trim();
    let negative = s.starts_with('-');
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let number_end = unsigned.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
    let (number, suffix) = unsigned.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let (binary, decimal) = exponents(suffix).ok_or(QuantityError::Suffix)?;
    let mut exponent = i64::from(decimal) + 3 - fraction.len() as i64;
    let Some(mut value) = digits.parse::<i128>().ok().or(digits.is_empty().then_some(0)) else {
        return Ok(if negative { i128::MIN } else { i128::MAX });
    };
    value = (0..binary).try_fold(value, |v, _| v.checked_mul(1024)).unwrap_or(i128::MAX);
    while exponent > 0 && value != 0 {
        value = value.checked_mul(10).unwrap_or(i128::MAX);
        exponent -= 1;
    }
    let divisor = (exponent < 0).then(|| 10i128.checked_pow((-exponent) as u32));
    let value = match divisor {
        None => value,
        Some(None) => i128::from(value > 0),
        Some(Some(d)) => value / d + i128::from(value % d != 0),
    };
    Ok(if negative { -value } else { value })
}

/// A suffix as powers of 1024 and of ten (`Mi` is 2 and 0, `k` 0 and 3, `e-2` 0 and -2).
fn exponents(suffix: &str) -> Option<(u32, i32)> {
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let decimal =
        [("n", -9), ("u", -6), ("m", -3), ("", 0), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];
    if let Some(i) = binary.iter().position(|b| *b == suffix) {
        return Some((i as u32 + 1, 0));
    }
    if let Some((_, e)) = decimal.iter().find(|(d, _)| *d == suffix) {
        return Some((0, *e));
    }
    let exponent = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty())?;
    exponent.parse::<i32>().ok().map(|e| (0, e))
}

fn multiplier(suffix: &str) -> Option<f64> {
    exponents(suffix).map(|(binary, decimal)| 1024f64.powi(binary as i32) * 10f64.powi(decimal))
}

/// Whether a quantity is written with a binary suffix (`64Mi`): apimachinery's `BinarySI` format, which a
/// sum keeps and [`canonical`] prints in.
pub fn is_binary(s: &str) -> bool {
    s.trim().ends_with('i')
}

/// A figure in thousandths as apimachinery's `Quantity.String()` prints it in its format: `BinarySI`
/// (`binary`) in the largest power of 1024 that divides it (`512Mi`, `1536Mi`) — unless it is under
/// 1024 or not whole, printed as decimal then —, else `DecimalSI` in the largest power of 1000 that
/// leaves a whole number (`500m`, `2`, `1500`, `2k`).
pub fn canonical(milli: i128, binary: bool) -> String {
    let sign = if milli < 0 { "-" } else { "" };
    let m = milli.unsigned_abs();
    if binary && m.is_multiple_of(1000) && m / 1000 >= 1024 {
        let (mut n, mut i) = (m / 1000, 0);
        while n.is_multiple_of(1024) && i < 6 {
            n /= 1024;
            i += 1;
        }
        return format!("{sign}{n}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][i]);
    }
    if m == 0 {
        return "0".into();
    }
    let (mut n, mut i) = (m, 0);
    while n.is_multiple_of(1000) && i < 7 {
        n /= 1000;
        i += 1;
    }
    format!("{sign}{n}{}", ["m", "", "k", "M", "G", "T", "P", "E"][i])
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

    #[test]
    fn figures_print_as_apimachinery_prints_them() {
        let mi = 1024 * 1024 * 1000;
        for (m, binary, text) in [
            (500, false, "500m"),
            (2000, false, "2"),
            (1_500_000, false, "1500"),
            (2_000_000, false, "2k"),
            (0, true, "0"),
            (512 * mi, true, "512Mi"),
            (1536 * mi, true, "1536Mi"),
            (1024 * mi, true, "1Gi"),
            (1_000_000, true, "1k"),
            (1_536_000, true, "1536"),
            (500, true, "500m"),
            (-2000, false, "-2"),
        ] {
            assert_eq!(canonical(m, binary), text, "{m} {binary}");
        }
        assert!(is_binary("64Mi") && !is_binary("64M") && !is_binary("1"));
    }

    #[test]
    fn milli_values_are_exact_and_rounded_up() {
        for (q, m) in [
            ("1", 1000),
            ("500m", 500),
            ("0.1", 100),
            ("0.1m", 1),
            ("1n", 1),
            ("0", 0),
            ("0.000", 0),
            ("1.5Gi", 1_610_612_736_000),
            ("128Mi", 134_217_728_000),
            ("1e3", 1_000_000),
            ("1E-2", 10),
            ("2.5k", 2_500_000),
            ("-1", -1000),
            ("100000000000000000000000000000000000000E", i128::MAX),
        ] {
            assert_eq!(milli(q), Ok(m), "{q}");
        }
        assert_eq!(milli("1mi"), Err(QuantityError::Suffix));
    }
}
