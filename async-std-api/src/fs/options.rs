//! [`OpenOptions`]: how a [`File`] is opened.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::file::File;
use super::pool::blocking;

/// Options for opening a file: the coroutine analogue of
/// [`std::fs::OpenOptions`], with the same builder methods, and std's
/// `std::os::unix::fs::OpenOptionsExt` (`mode`, `custom_flags`)
/// implemented. Only [`open`](OpenOptions::open) differs: it runs on the
/// blocking pool and returns this crate's [`File`].
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
/// use async_std_api::{fs, run};
///
/// run(|| -> std::io::Result<()> {
///     let path = std::env::temp_dir().join(format!("options-doc-{}", std::process::id()));
///     let mut f = fs::OpenOptions::new()
///         .write(true)
///         .create_new(true)
///         .mode(0o600)
///         .open(&path)?;
///     f.write_all(b"secret")?;
///     assert_eq!(f.metadata()?.permissions().mode() & 0o777, 0o600);
///     let again = fs::OpenOptions::new().write(true).create_new(true).open(&path);
///     assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
///     fs::remove_file(&path)
/// })
/// .unwrap()
/// .unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions(std::fs::OpenOptions);

impl OpenOptions {
    /// Options with every flag off: [`std::fs::OpenOptions::new`].
    #[must_use]
    pub fn new() -> OpenOptions {
        OpenOptions(std::fs::OpenOptions::new())
    }

    /// Read access: [`std::fs::OpenOptions::read`].
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.0.read(read);
        self
    }

    /// Write access: [`std::fs::OpenOptions::write`].
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.0.write(write);
        self
    }

    /// Append mode: every write goes to the end of the file, after which
    /// the cursor is there ([`std::fs::OpenOptions::append`]).
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.0.append(append);
        self
    }

    /// Truncate an existing file to 0 bytes: [`std::fs::OpenOptions::truncate`].
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.0.truncate(truncate);
        self
    }

    /// Create the file if it does not exist: [`std::fs::OpenOptions::create`].
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.0.create(create);
        self
    }

    /// Create a new file, failing with `AlreadyExists` if it exists
    /// (atomically): [`std::fs::OpenOptions::create_new`].
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.0.create_new(create_new);
        self
    }

    /// Opens `path` with these options: [`std::fs::OpenOptions::open`], on
    /// the blocking pool.
    ///
    /// # Errors
    ///
    /// As [`std::fs::OpenOptions::open`]: `NotFound`, `PermissionDenied`,
    /// `AlreadyExists` (`create_new`), `InvalidInput` (a combination std
    /// refuses); the calling coroutine's cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; a cancelled open is detached: the file it
    /// opens is closed on the pool thread, but one it created or truncated
    /// stays so.
    #[track_caller]
    pub fn open<P: AsRef<Path>>(&self, path: P) -> io::Result<File> {
        let options = self.0.clone();
        let path = path.as_ref().to_owned();
        let file = blocking("file open", move || options.open(path))?;
        // The cursor's probe (`lseek`, `fcntl`) never waits for the disk.
        Ok(File::from_std(file))
    }
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions::new()
    }
}

/// std's Unix extensions: the mode a created file gets (before the umask)
/// and extra `open(2)` flags.
impl OpenOptionsExt for OpenOptions {
    fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        self.0.mode(mode);
        self
    }

    fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        self.0.custom_flags(flags);
        self
    }
}

impl From<std::fs::OpenOptions> for OpenOptions {
    fn from(options: std::fs::OpenOptions) -> OpenOptions {
        OpenOptions(options)
    }
}
