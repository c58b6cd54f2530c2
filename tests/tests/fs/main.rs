//! Files, directories and filesystem watches (D-31): real files in unique
//! temporary directories, on every reactor (io_uring reads and writes
//! natively, the others through the blocking pool).

mod fs_cancel;
mod fs_dir;
mod fs_errors;
mod fs_file;
mod fs_watch;
mod scratch;
