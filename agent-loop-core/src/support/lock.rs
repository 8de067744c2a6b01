//! [`lock`]: a mutex locked whatever a panicking holder left.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, recovering from poisoning: the crate holds its locks
/// only around plain updates of complete values, which a panic elsewhere
/// cannot leave half done.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
