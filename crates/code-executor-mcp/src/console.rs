//! Terminal output of the people-facing commands (`demo`, `bench`, `login`, the command
//! line's answers); never used in serve mode, where stdout carries the protocol.

/// What `login` tells the person while stdout stays for its result (never used in serve
/// mode).
#[expect(
    clippy::print_stderr,
    reason = "login shows the URL to open and what it waits for"
)]
pub fn tell(text: &str) {
    eprintln!("{text}");
}

/// Terminal output of the people-facing commands (never used in serve mode).
#[expect(
    clippy::print_stdout,
    reason = "people-facing commands print their answer"
)]
pub fn say(text: &str) {
    println!("{text}");
}
