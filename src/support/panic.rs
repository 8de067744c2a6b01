//! Caught panics, as text: a panicking tool, middleware, factory or model
//! becomes an error that names the panic's message.

use std::any::Any;

/// The message of a caught panic payload, when it is a string.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
