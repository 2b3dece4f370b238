//! Quoting of file names in error messages the way GNU coreutils' `quoteaf` does in
//! the C locale (shell-escape-always style), so that `eqcheck walk` errors read as
//! du's: `'a b'`, `"it's"`, `'caf'$'\303\251'`.

use std::ffi::OsStr;

/// Bytes that stay literal inside single quotes in the C locale.
fn printable(b: u8) -> bool {
    (0x20..0x7f).contains(&b)
}

/// Characters that would need a backslash inside double quotes.
fn needs_escape_in_double_quotes(b: u8) -> bool {
    matches!(b, b'"' | b'$' | b'`' | b'\\')
}

/// Quotes a path as GNU's shell-escape-always style does.
pub fn quote(path: &OsStr) -> String {
    let bytes = path.as_encoded_bytes();
    if bytes.iter().all(|&b| printable(b)) {
        if !bytes.contains(&b'\'') {
            return format!("'{}'", String::from_utf8_lossy(bytes));
        }
        if !bytes.iter().any(|&b| needs_escape_in_double_quotes(b)) {
            return format!("\"{}\"", String::from_utf8_lossy(bytes));
        }
    }
    // Printable runs go in '...', other bytes in $'...' segments that follow on
    // directly, as in 'caf'$'\303\251'.
    let mut out = String::from("'");
    let mut escaping = false;
    for &b in bytes {
        match (printable(b), escaping) {
            (true, true) => {
                out.push_str("''");
                escaping = false;
            }
            (false, false) => {
                out.push_str("'$'");
                escaping = true;
            }
            _ => {}
        }
        if !printable(b) {
            out.push_str(&escape_byte(b));
        } else if b == b'\'' {
            out.push_str("'\\''");
        } else {
            out.push(b as char);
        }
    }
    out.push('\'');
    out
}

fn escape_byte(b: u8) -> String {
    match b {
        b'\n' => "\\n".into(),
        b'\t' => "\\t".into(),
        b'\r' => "\\r".into(),
        0x07 => "\\a".into(),
        0x08 => "\\b".into(),
        0x0b => "\\v".into(),
        0x0c => "\\f".into(),
        _ => format!("\\{b:03o}"),
    }
}

#[cfg(test)]
mod tests {
    use super::quote;
    use std::ffi::OsStr;

    #[test]
    fn plain_names_take_single_quotes() {
        assert_eq!(quote(OsStr::new("r/a b")), "'r/a b'");
    }

    #[test]
    fn a_single_quote_switches_to_double_quotes() {
        assert_eq!(quote(OsStr::new("it's")), "\"it's\"");
    }

    #[test]
    fn non_ascii_bytes_are_octal_escapes() {
        assert_eq!(quote(OsStr::new("café")), "'caf'$'\\303\\251'");
        assert_eq!(quote(OsStr::new("é/x")), "''$'\\303\\251''/x'");
    }
}
