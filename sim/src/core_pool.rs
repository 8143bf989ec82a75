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

/// A pool of core threads: the idle ones, each waiting on its channel.
pub(crate) struct Pool {
    idle: Mutex<Vec<Sender<Job>>>,
}

/// The process's pool, which launches use.
pub(crate) static POOL: Pool = Pool::new();

impl Pool {
    const fn new() -> Pool {
        Pool {
            idle: Mutex::new(Vec::new()),
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Sender<Job>>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `job` on a core thread of the pool: an idle one if there is one, else a new one.
    ///
    /// # Panics
    ///
    /// If no thread can be started (the process is out of threads).
    pub(crate) fn run(&'static self, mut job: Job) {
        loop {
            let Some(tx) = self.idle().pop() else { break };
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
                        let mut idle = self.idle();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_run_and_threads_are_reused() {
        // A pool of this test's own: the process's is shared with the launch tests.
        let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
        let (tx, rx) = mpsc::channel();
        let mut first_round = Vec::new();
        for round in 0..3 {
            // The four jobs of a round wait for each other, so they run on four threads at
            // once (a thread that finished a job could otherwise take the next one).
            let all = std::sync::Arc::new(std::sync::Barrier::new(4));
            for i in 0..4 {
                let (tx, all) = (tx.clone(), all.clone());
                pool.run(Box::new(move || {
                    all.wait();
                    tx.send((round, i, std::thread::current().id())).unwrap();
                }));
            }
            let got: Vec<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
            assert!(got.iter().all(|(r, _, _)| *r == round));
            let threads: Vec<_> = got.iter().map(|(_, _, t)| *t).collect();
            if round == 0 {
                first_round = threads;
            } else {
                // The first round's four threads were idle (waited for below), so they ran
                // these: no thread was started.
                assert!(
                    threads.iter().all(|t| first_round.contains(t)),
                    "round {round} ran on new threads"
                );
            }
            // Wait (bounded) until the four threads are back in the pool.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while pool.idle().len() < 4 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "threads never went idle"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}
