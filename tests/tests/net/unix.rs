//! D-33: Unix domain sockets (`net::UnixStream`, `UnixListener`,
//! `UnixDatagram`) on every reactor.

use std::cell::Cell;
use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use async_std_api::net::{UnixDatagram, UnixListener, UnixStream};
use async_std_api::{io, run, spawn};
use tests::support::{join_cancelled, yield_until_waiting};

/// A fresh path for a socket file, removed by the caller's guard.
struct TempSock(PathBuf);

impl TempSock {
    fn new(tag: &str) -> TempSock {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p = std::env::temp_dir().join(format!("aa-{tag}-{}-{n}.sock", std::process::id()));
        TempSock(p)
    }
}

impl Drop for TempSock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn d33_a_stream_at_a_path_echoes_and_sees_end_of_stream() {
    run(|| {
        let path = TempSock::new("stream");
        let listener = UnixListener::bind(&path.0).unwrap();
        assert_eq!(
            listener.local_addr().unwrap().as_pathname(),
            Some(path.0.as_path())
        );
        let p = path.0.clone();
        let client = spawn(move || {
            let mut s = UnixStream::connect(&p).unwrap();
            s.write_all(b"hello unix").unwrap();
            s.shutdown(std::net::Shutdown::Write).unwrap();
            let mut back = Vec::new();
            s.read_to_end(&mut back).unwrap();
            back
        });
        let (mut conn, _peer) = listener.accept().unwrap();
        let mut got = Vec::new();
        conn.read_to_end(&mut got).unwrap(); // EOF after the client's shutdown
        conn.write_all(&got).unwrap();
        drop(conn);
        assert_eq!(client.join().unwrap(), b"hello unix");
    })
    .unwrap();
}

#[test]
fn d33_abstract_names_connect_and_leave_no_file() {
    run(|| {
        let name = format!("aa-test-{}-abstract", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&addr).unwrap();
        let a = addr.clone();
        let client = spawn(move || {
            let mut s = UnixStream::connect_addr(&a).unwrap();
            s.write_all(b"x").unwrap();
        });
        let (mut conn, _) = listener.accept().unwrap();
        let mut b = [0u8; 1];
        conn.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"x");
        client.join().unwrap();
        assert_eq!(
            listener.local_addr().unwrap().as_abstract_name(),
            Some(name.as_bytes())
        );
    })
    .unwrap();
}

#[test]
fn d33_connect_errors_are_stds() {
    run(|| {
        let path = TempSock::new("missing");
        let e = UnixStream::connect(&path.0).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
        // A socket file nobody listens on any more.
        drop(std::os::unix::net::UnixListener::bind(&path.0).unwrap());
        let e = UnixStream::connect(&path.0).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
        let long = std::env::temp_dir().join("x".repeat(200));
        let e = UnixStream::connect(long).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    })
    .unwrap();
}

#[test]
fn d33_a_cancelled_stream_read_leaves_the_stream_usable() {
    run(|| {
        let (a, b) = UnixStream::pair().unwrap();
        let b = Rc::new(b);
        let seen = Rc::new(Cell::new(false));
        let (b1, s) = (b.clone(), seen.clone());
        let reader = spawn(move || {
            let mut buf = [0u8; 4];
            let e = (&*b1).read(&mut buf).unwrap_err();
            s.set(io::cancelled(&e).is_some());
        });
        yield_until_waiting(&[&reader.coroutine()]);
        reader.cancel();
        join_cancelled(reader);
        assert!(seen.get());
        (&a).write_all(b"more").unwrap();
        let mut buf = [0u8; 4];
        (&*b).read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"more");
    })
    .unwrap();
}

#[test]
fn d33_a_stream_read_timeout_is_stds_would_block() {
    run(|| {
        let (_a, b) = UnixStream::pair().unwrap();
        b.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut buf = [0u8; 1];
        let e = (&b).read(&mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}");
    })
    .unwrap();
}

#[test]
fn d33_datagrams_between_paths_name_their_sender() {
    run(|| {
        let (pa, pb) = (TempSock::new("dga"), TempSock::new("dgb"));
        let a = UnixDatagram::bind(&pa.0).unwrap();
        let b = UnixDatagram::bind(&pb.0).unwrap();
        let receiver = spawn(move || {
            let mut buf = [0u8; 16];
            let (n, from) = b.recv_from(&mut buf).unwrap();
            (
                buf[..n].to_vec(),
                from.as_pathname().map(|p| p.to_path_buf()),
            )
        });
        yield_until_waiting(&[&receiver.coroutine()]);
        a.send_to(b"dgram", &pb.0).unwrap();
        assert_eq!(
            receiver.join().unwrap(),
            (b"dgram".to_vec(), Some(pa.0.clone()))
        );

        let (x, y) = UnixDatagram::pair().unwrap();
        x.send(b"1").unwrap();
        x.send(b"22").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(y.recv(&mut buf).unwrap(), 1);
        assert_eq!(y.recv(&mut buf).unwrap(), 2);
        let u = UnixDatagram::unbound().unwrap();
        u.connect_addr(&x.local_addr().unwrap()).unwrap_err(); // unnamed: nothing to connect to
    })
    .unwrap();
}
