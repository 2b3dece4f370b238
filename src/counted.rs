//! A count with its noun, singular for one: `1 case`, `2 cases`, `0 cases`. The
//! messages that count go through here, so none reads "1 cases".

/// `n` and the noun that fits it.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", noun(n, one, many))
}

/// The noun that fits `n`, for a count the caller writes itself (with thousands
/// separators, say).
pub fn noun<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    match n {
        1 => one,
        _ => many,
    }
}

#[cfg(test)]
mod tests {
    use super::{counted, noun};

    #[test]
    fn one_takes_the_singular_and_every_other_count_the_plural() {
        assert_eq!(counted(1, "case", "cases"), "1 case");
        assert_eq!(counted(0, "case", "cases"), "0 cases");
        assert_eq!(counted(2, "entry", "entries"), "2 entries");
        assert_eq!(noun(1_000, "folder", "folders"), "folders");
    }
}
