//! The reactor's error: the kit's (`reactor_sdk::error`), an ABI status
//! plus one lowercase line for `last_error_message`.

pub(crate) use reactor_sdk::error::{Error, Result};
