//! The reactor's error: the kit's (`reactor_sdk::error`), an ABI status
//! plus one line for `last_error_message` (and, from `create`, for
//! `cfg->err_buf`).

pub(crate) use reactor_sdk::error::{neg_errno, Error, Result};
