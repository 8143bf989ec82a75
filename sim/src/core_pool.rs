//! The threads that run kernel blocks, kept across launches: starting a thread per block per
//! launch dominated the cost of short kernels. A block runs on an idle core thread, or on a new
//! one; a thread returns to the pool when its block is done and leaves it after a while unused,
//! or when the pool already holds enough idle threads.

use std::sync::Mutex;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

/// A block to run.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// Idle threads kept at most: two NPUs' worth of vector cores.
const MAX_IDLE: usize = 96;
/// How long an idle thread waits for a block before it ends.
const IDLE_FOR: Duration = Duration::from_secs(30);
/// A core thread's stack: kernels are not deep, but C++ kernels may keep arrays on it.
const STACK: usize = 2 << 20;

/// The idle threads, each waiting on its channel.
static IDLE: Mutex<Vec<Sender<Job>>> = Mutex::new(Vec::new());

fn idle() -> std::sync::MutexGuard<'static, Vec<Sender<Job>>> {
    IDLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `job` on a core thread: an idle one if there is one, else a new one.
///
/// # Panics
///
/// If no thread can be started (the process is out of threads).
pub(crate) fn run(mut job: Job) {
    loop {
        let Some(tx) = idle().pop() else { break };
        match tx.send(job) {
            Ok(()) => return,
            // That thread has just ended: try the next one.
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("ai-core".into())
        .stack_size(STACK)
        .spawn(move || {
            let mut job = job;
            loop {
                job();
                {
                    let mut idle = idle();
                    if idle.len() >= MAX_IDLE {
                        return;
                    }
                    idle.push(tx.clone());
                }
                match rx.recv_timeout(IDLE_FOR) {
                    Ok(next) => job = next,
                    // Unused for a while: end (a send to this thread then fails and the
                    // sender starts another).
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
                }
            }
        })
        .expect("cannot start a simulated core's thread");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_run_and_threads_are_reused() {
        let (tx, rx) = mpsc::channel();
        for round in 0..3 {
            for i in 0..4 {
                let tx = tx.clone();
                run(Box::new(move || {
                    let name = std::thread::current().id();
                    tx.send((round, i, name)).unwrap();
                }));
            }
            let got: Vec<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
            assert!(got.iter().all(|(r, _, _)| *r == round));
        }
        assert!(
            !idle().is_empty(),
            "finished threads wait for the next block"
        );
    }
}
