//! What the command line's own parser leaves unsaid: which argument it refused,
//! and after which flag.

/// Which argument was not UTF-8, and after what: clap says only that one was.
/// Paths to write (`--json`) may be any bytes; names that select (`--tree`, a
/// program) are text, as the reports that show them are.
pub(super) fn not_utf8() -> String {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let Some(at) = args.iter().position(|a| a.to_str().is_none()) else {
        return "an argument is not UTF-8".into();
    };
    let bytes = args[at].as_encoded_bytes();
    let shown = crate::fixtures::names::escaped(bytes);
    // `--tree=VALUE` in one argument, or `--tree VALUE` in two.
    let joined = (bytes.starts_with(b"--"))
        .then(|| bytes.iter().position(|&b| b == b'='))
        .flatten()
        .and_then(|eq| std::str::from_utf8(&bytes[..eq]).ok());
    let before = args.get(at - 1).and_then(|a| a.to_str());
    let after = match (joined, before) {
        (Some(flag), _) => format!(" (the value of {flag})"),
        (None, Some(flag)) if at > 1 && flag.starts_with('-') => format!(" (the value of {flag})"),
        _ => String::new(),
    };
    format!(
        "argument {at}{after} is not UTF-8: `{shown}`; name a tree or a program by a path that is (a symlink to it, say)"
    )
}
