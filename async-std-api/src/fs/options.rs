//! [`OpenOptions`]: how a [`File`] is opened.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::file::File;
use super::native;
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
pub struct OpenOptions {
    /// std's, for the pool and for std's checks of the combination.
    std: std::fs::OpenOptions,
    /// The same choices, for an open the reactor runs (NA1 in `native`).
    flags: Flags,
}

/// What `open(2)` is asked for, as std builds it (`sys/fs/unix.rs`).
#[derive(Clone, Copy, Debug)]
struct Flags {
    read: bool,
    write: bool,
    append: bool,
    truncate: bool,
    create: bool,
    create_new: bool,
    custom: i32,
    mode: u32,
}

impl Flags {
    /// The `open(2)` flags of a combination std accepted: its access mode,
    /// its creation mode, and the custom flags but an access mode.
    fn open_flags(&self) -> u32 {
        let access = match (self.read, self.write, self.append) {
            (true, false, false) => libc::O_RDONLY,
            (false, true, false) => libc::O_WRONLY,
            (true, true, false) => libc::O_RDWR,
            (false, _, true) => libc::O_WRONLY | libc::O_APPEND,
            (true, _, true) => libc::O_RDWR | libc::O_APPEND,
            // std refused it before (see `OpenOptions::open`).
            (false, false, false) => libc::O_RDONLY,
        };
        let creation = match (self.create, self.truncate, self.create_new) {
            (false, false, false) => 0,
            (true, false, false) => libc::O_CREAT,
            (false, true, false) => libc::O_TRUNC,
            (true, true, false) => libc::O_CREAT | libc::O_TRUNC,
            (_, _, true) => libc::O_CREAT | libc::O_EXCL,
        };
        (access | creation | (self.custom & !libc::O_ACCMODE)) as u32
    }
}

impl OpenOptions {
    /// Options with every flag off: [`std::fs::OpenOptions::new`].
    #[must_use]
    pub fn new() -> OpenOptions {
        OpenOptions {
            std: std::fs::OpenOptions::new(),
            flags: Flags {
                read: false,
                write: false,
                append: false,
                truncate: false,
                create: false,
                create_new: false,
                custom: 0,
                mode: 0o666,
            },
        }
    }

    /// Read access: [`std::fs::OpenOptions::read`].
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.std.read(read);
        self.flags.read = read;
        self
    }

    /// Write access: [`std::fs::OpenOptions::write`].
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.std.write(write);
        self.flags.write = write;
        self
    }

    /// Append mode: every write goes to the end of the file, after which
    /// the cursor is there ([`std::fs::OpenOptions::append`]).
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.std.append(append);
        self.flags.append = append;
        self
    }

    /// Truncate an existing file to 0 bytes: [`std::fs::OpenOptions::truncate`].
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.std.truncate(truncate);
        self.flags.truncate = truncate;
        self
    }

    /// Create the file if it does not exist: [`std::fs::OpenOptions::create`].
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.std.create(create);
        self.flags.create = create;
        self
    }

    /// Create a new file, failing with `AlreadyExists` if it exists
    /// (atomically): [`std::fs::OpenOptions::create_new`].
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.std.create_new(create_new);
        self.flags.create_new = create_new;
        self
    }

    /// Opens `path` with these options: [`std::fs::OpenOptions::open`], as
    /// a request the reactor runs (io_uring's `OPENAT`, ABI 1.1) or on the
    /// blocking pool.
    ///
    /// # Errors
    ///
    /// As [`std::fs::OpenOptions::open`]: `NotFound`, `PermissionDenied`,
    /// `AlreadyExists` (`create_new`), `InvalidInput` (a combination std
    /// refuses, with std's message); the calling coroutine's cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point. In the reactor, a cancelled open either did
    /// not happen (the cancellation is returned) or completed first (the
    /// file is returned and the cancellation stays pending, P-08). On the
    /// pool, a cancelled open is detached: the file it opens is closed on
    /// the pool thread, but one it created or truncated stays so.
    #[track_caller]
    pub fn open<P: AsRef<Path>>(&self, path: P) -> io::Result<File> {
        let path = path.as_ref();
        if native::files() && self.std_accepts()? {
            if let Ok(r) = native::open(path, self.flags.open_flags(), self.flags.mode) {
                return r.map(|fd| File::from_std(std::fs::File::from(fd)));
            }
        }
        let options = self.std.clone();
        let path = path.to_owned();
        let file = blocking("file open", move || options.open(path))?;
        // The cursor's probe (`lseek`, `fcntl`) never waits for the disk.
        Ok(File::from_std(file))
    }

    /// Whether std accepts the combination, asked of std itself so its
    /// refusal is word for word std's: std checks the flags before any
    /// path, and the empty path then fails at once with `ENOENT` (no
    /// lookup, no waiting).
    fn std_accepts(&self) -> io::Result<bool> {
        match self.std.open("") {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => Err(e),
            // Anything else: let std's own open on the pool answer.
            _ => Ok(false),
        }
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
        self.std.mode(mode);
        self.flags.mode = mode;
        self
    }

    fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        self.std.custom_flags(flags);
        self.flags.custom = flags;
        self
    }
}
