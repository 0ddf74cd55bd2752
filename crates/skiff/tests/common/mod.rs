//! Shared support of the binary's end-to-end tests.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;

/// The child's stdout lines, read on a thread (which keeps draining after the receiver is
/// dropped, so the broker never blocks on a full pipe). The child must have a piped stdout.
pub fn stdout_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let Some(stdout) = child.stdout.take() else {
        panic!("the child's stdout is not piped")
    };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    rx
}
