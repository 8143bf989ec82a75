//! A strict stream holds its work until it is synchronised, or until a thread of the process
//! blocks in a wait. This test has a process of its own: in the other test binaries, threads
//! of concurrent tests wait, which would release the stream early.

mod common;

use std::time::Duration;

use common::{load64, run, strict};
use shmem_backend::{Local, Transport};
use shmem_sim::Stream;

#[test]
fn a_put_on_a_strict_stream_shows_only_after_the_stream_is_synchronised() {
    run(2, strict(), |pe, t, b| {
        let stream = Stream::new(true);
        let q = t.stream_queue(&stream).unwrap();
        if pe == 0 {
            let mut data = 0x5eed_u64.to_ne_bytes();
            // SAFETY: PE 1 exists and the range lies inside its segment.
            unsafe { t.put(&q, 1, 512, Local::Host(&data)).unwrap() };
            // A blocking put's source is free again when the call returns.
            data = [0xff; 8];
            let _ = data;
            // Time in which a stream that did not hold its work would run it (the check below
            // holds however long this is: held work runs only when released).
            std::thread::sleep(Duration::from_millis(20));
        }
        b.wait();
        if pe == 1 {
            assert_eq!(load64(t, 512), 0, "stream work ran before synchronisation");
        }
        b.wait();
        if pe == 0 {
            // quiet on a stream queue synchronises the stream.
            t.quiet(&q).unwrap();
        }
        b.wait();
        if pe == 1 {
            assert_eq!(load64(t, 512), 0x5eed);
        }
    });
}
