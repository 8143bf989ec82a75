//! `isolation::` — a handle belongs to one instance. Every instance's first block lies at the
//! same heap offset, so a view of instance 1 used through a context, scope or team of instance
//! 0 would otherwise land on instance 0's live data. Each case uses instance 1's memory through
//! one entry point of instance 0, expects `INVALID_PARAM` naming both instances, and checks that
//! neither instance's memory changed on any PE.

use shmem::{Cmp, Code, Context, CtxOptions, Instance, ReduceOp, SignalOp, SymBuf, SymSlice};

use crate::cases::multi_instance::attrs_for;
use crate::{Case, Ctx, Failure, Outcome, check, check_eq};

/// Elements of each instance's buffer.
const N: usize = 8;
/// What the puts would write.
static SRC: [u64; N] = [0x5eed; N];
/// A collective's `dest`/`source` pair needs `n_pes` blocks; the cases run on up to 4 PEs.
const WIDE: usize = N * 4;

/// Instance 0 (`a`) and instance 1 (`b`) over every PE, each with a buffer at the same offset.
struct Pair {
    a: Instance,
    b: Instance,
    abuf: SymBuf<u64>,
    bbuf: SymBuf<u64>,
    /// A created context of instance 0.
    ctx_a: Context,
    /// The right neighbour.
    peer: u32,
}

impl Pair {
    /// Instance 1's buffer, first `N` elements.
    fn bv(&self) -> SymSlice<'_, u64> {
        self.bbuf.slice(..N)
    }

    /// Instance 0's buffer, first `N` elements.
    fn av(&self) -> SymSlice<'_, u64> {
        self.abuf.slice(..N)
    }
}

fn sentinel(tag: u64, pe: u32) -> Vec<u64> {
    (0..WIDE as u64)
        .map(|i| tag << 32 | u64::from(pe) << 16 | i)
        .collect()
}

/// Runs `probe` on every PE, expects it to fail with `INVALID_PARAM` naming both instances,
/// and checks that it wrote nothing on any PE.
fn isolated(ctx: &Ctx, probe: fn(&Pair) -> shmem::Result<()>) -> Outcome {
    let a = ctx.world()?;
    let members: Vec<u32> = (0..ctx.n_pes).collect();
    let b = Instance::init(&attrs_for(ctx, 1, &members).expect("every PE is a member"))?;
    let me = a.my_pe();
    let (abuf, bbuf) = (a.malloc::<u64>(WIDE)?, b.malloc::<u64>(WIDE)?);
    check_eq!(
        abuf.offset(),
        bbuf.offset(),
        "the case needs both buffers at the same heap offset"
    );
    abuf.as_slice().put(&sentinel(0xa, me), me)?;
    bbuf.as_slice().put(&sentinel(0xb, me), me)?;
    a.barrier_all()?;
    b.barrier_all()?;
    let pair = Pair {
        ctx_a: a.ctx_create(CtxOptions::NONE)?,
        peer: (me + 1) % a.n_pes(),
        a,
        b,
        abuf,
        bbuf,
    };
    match probe(&pair) {
        Ok(()) => {
            return Err(Failure(
                "memory of instance 1 was accessed through instance 0".into(),
            ));
        }
        Err(e) if e.code() == Code::InvalidParam => {
            let msg = e.to_string();
            check!(
                msg.contains("instance 1") && msg.contains("instance 0"),
                "the error does not name both instances: {msg}"
            );
        }
        Err(e) => {
            return Err(Failure(format!(
                "failed with {:?} ({e}); expected INVALID_PARAM",
                e.code()
            )));
        }
    }
    let Pair {
        a,
        b,
        abuf,
        bbuf,
        ctx_a,
        ..
    } = pair;
    ctx_a.quiet()?;
    ctx_a.destroy()?;
    a.barrier_all()?;
    b.barrier_all()?;
    check_eq!(
        abuf.as_slice().to_vec(me)?,
        sentinel(0xa, me),
        "instance 0's buffer changed"
    );
    check_eq!(
        bbuf.as_slice().to_vec(me)?,
        sentinel(0xb, me),
        "instance 1's buffer changed"
    );
    // Instance 0's collectives still work (their scratch was not touched either).
    let sum = a.calloc::<u64>(1)?;
    sum.as_slice().put(&[1], me)?;
    a.barrier_all()?;
    a.team_world().sum_reduce(sum.as_slice(), sum.as_slice())?;
    check_eq!(sum.as_slice().g(0, me)?, u64::from(a.n_pes()));
    sum.free()?;
    abuf.free()?;
    bbuf.free()?;
    b.finalize()?;
    a.finalize()?;
    Ok(())
}

macro_rules! probes {
    ($($name:literal => $probe:expr,)*) => {
        vec![$(
            Case::new(concat!("isolation::", $name), |c| isolated(c, $probe))
                .pes(&[2])
                .full_pes(&[1, 4]),
        )*]
    };
}

pub(crate) fn cases() -> Vec<Case> {
    probes! {
        "put_on_a_context_of_another_instance" => |p| p.bv().on(&p.ctx_a).put(&SRC, p.peer),
        "get_on_a_context_of_another_instance" => |p| {
            p.bv().on(&p.ctx_a).get(&mut [0; N], p.peer)
        },
        "p_on_a_context_of_another_instance" => |p| p.bv().on(&p.ctx_a).p(0, 1, p.peer),
        "g_on_a_context_of_another_instance" => |p| p.bv().on(&p.ctx_a).g(0, p.peer).map(drop),
        "iput_on_a_context_of_another_instance" => |p| {
            p.bv().on(&p.ctx_a).iput(2, &SRC, 1, N / 2, p.peer)
        },
        "iget_on_a_context_of_another_instance" => |p| {
            p.bv().on(&p.ctx_a).iget(2, &mut [0; N], 1, N / 2, p.peer)
        },
        "put_from_a_view_of_another_instance" => |p| p.av().put_from(p.bv(), p.peer),
        "get_into_a_view_of_another_instance" => |p| p.av().get_into(p.bv(), p.peer),
        "put_nbi_in_a_scope_of_another_instance" => |p| {
            p.a.nbi(|s| s.put_nbi(p.bv(), &SRC, p.peer))?
        },
        "get_nbi_in_a_scope_of_another_instance" => |p| {
            let mut back = [0u64; N];
            p.a.nbi(|s| s.get_nbi(p.bv(), &mut back, p.peer))?
        },
        "amo_on_a_context_of_another_instance" => |p| {
            p.bv().elem(0).on(&p.ctx_a).atomic_fetch_add(1, p.peer).map(drop)
        },
        "amo_nbi_in_a_scope_of_another_instance" => |p| {
            let mut fetched = 0u64;
            p.a.nbi(|s| s.atomic_fetch_add_nbi(p.bv().elem(0), &mut fetched, 1, p.peer))?
        },
        "put_signal_with_a_signal_of_another_instance" => |p| {
            p.av().put_signal(&SRC, p.bv().elem(0), 1u64, SignalOp::Set, p.peer)
        },
        "put_signal_into_a_view_of_another_instance" => |p| {
            p.bv()
                .on(&p.ctx_a)
                .put_signal(&SRC, p.av().elem(0).on(&p.ctx_a), 1u64, SignalOp::Add, p.peer)
        },
        "put_signal_nbi_with_a_signal_of_another_instance" => |p| {
            p.a.nbi(|s| s.put_signal_nbi(p.av(), &SRC, p.bv().elem(0), 1u64, SignalOp::Set, p.peer))?
        },
        "put_signal_nbi_into_a_view_of_another_instance" => |p| {
            p.a.nbi(|s| s.put_signal_nbi(p.bv(), &SRC, p.av().elem(0), 1u64, SignalOp::Set, p.peer))?
        },
        "signal_op_on_a_context_of_another_instance" => |p| {
            p.bv().elem(0).on(&p.ctx_a).signal_op(1u64, SignalOp::Add, p.peer)
        },
        "signal_wait_on_a_context_of_another_instance" => |p| {
            p.bv().elem(0).on(&p.ctx_a).signal_wait_until(Cmp::Eq, 0x5eed).map(drop)
        },
        "wait_until_on_a_context_of_another_instance" => |p| {
            p.bv().elem(0).on(&p.ctx_a).wait_until(Cmp::Eq, 0x5eed).map(drop)
        },
        "test_on_a_context_of_another_instance" => |p| {
            p.bv().on(&p.ctx_a).test_any(None, Cmp::Eq, 0x5eed).map(drop)
        },
        "lock_on_a_context_of_another_instance" => |p| {
            p.b.view::<i64>(p.bbuf.offset(), 1)?.elem(0).on(&p.ctx_a).set_lock()
        },
        "broadcast_into_a_view_of_another_instance" => |p| {
            p.a.team_world().broadcast(p.bv(), p.av(), 0)
        },
        "broadcast_from_a_view_of_another_instance" => |p| {
            p.a.team_world().broadcast(p.av(), p.bv(), 0)
        },
        "fcollect_into_a_view_of_another_instance" => |p| {
            let n = p.a.n_pes() as usize;
            p.a.team_world().fcollect(p.bbuf.slice(..N * n), p.abuf.slice(..N))
        },
        "collect_from_a_view_of_another_instance" => |p| {
            let n = p.a.n_pes() as usize;
            p.a.team_world().collect(p.abuf.slice(..N * n), p.bv()).map(drop)
        },
        "alltoall_into_a_view_of_another_instance" => |p| {
            let n = p.a.n_pes() as usize;
            p.a.team_world().alltoall(p.bbuf.slice(..n), p.abuf.slice(..n))
        },
        "alltoalls_from_a_view_of_another_instance" => |p| {
            let n = p.a.n_pes() as usize;
            p.a.team_world().alltoalls(p.abuf.slice(..n), p.bbuf.slice(..n), 1, 1, 1)
        },
        "reduce_into_a_view_of_another_instance" => |p| {
            p.a.team_world().reduce(ReduceOp::Sum, p.bv(), p.av())
        },
        "reduce_from_a_view_of_another_instance" => |p| {
            p.a.team_world().reduce(ReduceOp::Sum, p.av(), p.bv())
        },
        "team_of_another_instance_into_this_one" => |p| {
            p.b.team_world().sum_reduce(p.av(), p.bv())
        },
    }
}
