//! The program of the reliability tests (`core/reliability/tests/faults.rs`): it passes every fault point
//! of the library in turn (init, a collective allocation, a barrier, a lock, a point-to-point
//! wait, an exchange collective, a kernel launch, finalize), so that `SHMEM_FAULT` can end or
//! stop one PE exactly there. A PE whose call fails prints the step and the error on one line.
//!
//! Under a launcher (`shmemrun -n 4 -- fault_job`) it joins the job from the environment.
//! Self-launched, `FAULT_JOB=PE,N,PORT` makes it PE `PE` of `N` on instance 0 (the bootstrap at
//! `127.0.0.1:PORT`), and PEs 0 and 1 also form instance 1 (its port from
//! `SHMEM_INSTANCE_PORT_RANGE`). A survivor
//! of a failed step then shows that new calls on instance 0 fail at once and that instance 1
//! still works.
//!
//! ```text
//! SHMEM_FAULT=barrier.waiting:kill:2 shmemrun -n 4 -- target/debug/examples/fault_job
//! ```

use std::process::ExitCode;
use std::time::Instant;

use shmem::{Attributes, Cmp, Instance};

/// Bytes each PE sends each other in the alltoall: above the collectives' scratch, so it takes
/// the exchange path.
const BLOCK: usize = 4096;

fn main() -> ExitCode {
    let own = std::env::var("FAULT_JOB").ok().map(|v| {
        let f: Vec<u32> = v
            .split(',')
            .map(|x| x.parse().expect("FAULT_JOB=PE,N,PORT"))
            .collect();
        assert_eq!(f.len(), 3, "FAULT_JOB=PE,N,PORT");
        (f[0], f[1], f[2])
    });
    let inst = match own {
        Some((pe, n, port)) => Instance::init(&Attributes::new(
            pe,
            n,
            &format!("tcp://127.0.0.1:{port}"),
            4 << 20,
        )),
        None => Instance::from_env(),
    };
    let inst = match inst {
        Ok(i) => i,
        Err(e) => return failed(None, "init", &e),
    };
    let me = inst.my_pe();
    // Instance 1, of PEs 0 and 1 only, when self-launched.
    let other = match own {
        Some((pe @ (0 | 1), _, _)) => {
            let mut a = Attributes::new(pe, 2, "tcp://127.0.0.1:0", 2 << 20);
            a.instance_id = 1;
            match Instance::init(&a) {
                Ok(i) => Some(i),
                Err(e) => return failed(Some(me), "init of instance 1", &e),
            }
        }
        _ => None,
    };
    match steps(&inst) {
        Ok(()) => {
            println!("fault_job: PE {me}: done");
            ExitCode::SUCCESS
        }
        Err((step, e)) => {
            let code = failed(Some(me), step, &e);
            if matches!(e, shmem::Error::PeerLost { .. }) {
                after_failure(&inst, other.as_ref());
            }
            code
        }
    }
}

/// Writes `line` to standard error in one write, so that a PE the launcher stops meanwhile
/// leaves a whole line or none (`eprintln!` writes each piece of its format apart).
fn say(line: String) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
}

fn failed(me: Option<u32>, step: &str, e: &shmem::Error) -> ExitCode {
    let who = me.map_or("a PE".into(), |p| format!("PE {p}"));
    let lost = match e {
        shmem::Error::PeerLost { pe, .. } => format!(" [lost PE {pe}]"),
        _ => String::new(),
    };
    say(format!("fault_job: {who}: {step} failed{lost}: {e}"));
    ExitCode::from(1)
}

/// A survivor of a lost peer: a new call on the failed instance fails at once; instance 1 still
/// works.
fn after_failure(inst: &Instance, other: Option<&Instance>) {
    let t = Instant::now();
    let again = inst.barrier_all();
    say(format!(
        "fault_job: PE {}: a new barrier {} after {:.3} s",
        inst.my_pe(),
        if again.is_ok() { "succeeded" } else { "failed" },
        t.elapsed().as_secs_f64()
    ));
    if let Some(o) = other {
        let works = (|| {
            let x = o.calloc::<u64>(1)?;
            x.as_slice()
                .put(&[u64::from(o.my_pe()) + 10], 1 - o.my_pe())?;
            o.barrier_all()?;
            let got = x.as_slice().g(0, o.my_pe())?;
            o.finalize()?;
            Ok::<_, shmem::Error>(got == u64::from(1 - o.my_pe()) + 10)
        })();
        say(format!(
            "fault_job: PE {}: instance 1 works: {works:?}",
            inst.my_pe()
        ));
    }
}

type Step = (&'static str, shmem::Error);

fn steps(inst: &Instance) -> Result<(), Step> {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let at = |step: &'static str| move |e: shmem::Error| (step, e);
    let words = inst.calloc::<u64>(1).map_err(at("malloc"))?;
    let lock = inst.calloc::<i64>(1).map_err(at("malloc"))?;
    inst.barrier_all().map_err(at("barrier_all"))?;
    let lock = lock.elem(0);
    lock.set_lock().map_err(at("set_lock"))?;
    lock.clear_lock().map_err(at("clear_lock"))?;
    words
        .slice(0..1)
        .put(&[1], (me + 1) % n)
        .map_err(at("put"))?;
    words
        .elem(0)
        .wait_until(Cmp::Eq, 1)
        .map_err(at("wait_until"))?;
    let src = inst
        .calloc::<u8>(n as usize * BLOCK)
        .map_err(at("malloc"))?;
    let dst = inst
        .calloc::<u8>(n as usize * BLOCK)
        .map_err(at("malloc"))?;
    inst.team_world()
        .alltoall(dst.as_slice(), src.as_slice())
        .map_err(at("alltoall"))?;
    let stream = shmem::Stream::new();
    inst.launch(&stream, "fault_barrier", 1, |dev| dev.barrier_all())
        .map_err(at("kernel launch"))?;
    stream.synchronize().map_err(at("kernel"))?;
    inst.finalize().map_err(at("finalize"))
}
