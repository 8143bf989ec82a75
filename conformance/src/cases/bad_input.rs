//! Bad input, generated (issue 14, item 3), for the Rust API: `build.rs` reads the `shmem`
//! crate's source and makes one call per public method × invalid argument (PE, address, size,
//! stride, handle, state), every other argument valid. Each call must refuse as the method
//! documents: an `Err` whose code fits the class (`INVALID_PARAM`/`INVALID_VALUE`, `MALLOC_FAILED`
//! for an allocation's size, `NOT_INITED` on a finalized instance), `None` or `false`, or a
//! panic where the method's docs have a `# Panics` section. Around every call, a checksum of
//! each live instance's heap on every PE (all of it past CANN's reserve for barrier and
//! collective flags, free space included) must not change, and the PEs must still meet in a
//! barrier.
//!
//! The invalid values: a PE equal to the number of PEs; an address outside every heap (a host
//! array) or a buffer of another instance; a length past the buffer, an index one past the end,
//! an alignment that is not a power of two; a stride that leads far outside the heap (or 0 for
//! a team split); a destroyed team or context; an instance that was finalized.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use shmem::{
    AmoOp, Cmp, Code, Context, CtxOptions, Device, Instance, KernelError, MultiDevice,
    NonContiguousCopyParam, ReduceOp, SignalOp, Stream, SymBuf, Team, TeamConfig,
};

use crate::cases::multi_instance::attrs_for;
use crate::{Case, Ctx, Failure, Need, Outcome};

/// Elements in the fixture's buffers (the generator's valid length).
const LEN: usize = 16;
/// Buffers of the finalized instance that calls may consume (`SymBuf::free`, `realloc`).
const SPARES: usize = 4;

include!("bad_input_class.rs");

/// One generated call.
#[derive(Debug)]
pub struct Call {
    /// `Type::method`.
    pub entry: &'static str,
    /// The class of the invalid argument.
    pub class: Class,
    /// The invalid argument's name, or "the receiver".
    pub arg: &'static str,
    /// Whether the method documents a panic.
    pub panics: bool,
    run: fn(&Fixture) -> Verdict,
}

mod generated {
    // The calls of unsafe fns pass what their contracts ask (valid pointers and lengths).
    #![allow(
        clippy::all,
        clippy::undocumented_unsafe_blocks,
        unused_qualifications,
        unused_variables
    )]
    use super::*;
    include!(concat!(env!("OUT_DIR"), "/rust_api_bad_input.rs"));
}
pub use generated::{CALLS, NOT_GENERATED};

/// What a call did.
#[derive(Debug)]
enum Verdict {
    Accepted,
    /// An error with its code, or `None`/`false`.
    Refused(Option<Code>),
    Panicked(String),
}

/// How a method's result says it refused.
trait Report {
    fn verdict(self) -> Verdict;
}

impl<T> Report for shmem::Result<T> {
    fn verdict(self) -> Verdict {
        match self {
            Ok(_) => Verdict::Accepted,
            Err(e) => Verdict::Refused(Some(e.code())),
        }
    }
}

impl<T> Report for Option<T> {
    fn verdict(self) -> Verdict {
        match self {
            Some(_) => Verdict::Accepted,
            None => Verdict::Refused(None),
        }
    }
}

/// A device-side call: the device API has no codes (CANN's returns nothing), so an error is a
/// refusal.
impl<T> Report for Result<T, KernelError> {
    fn verdict(self) -> Verdict {
        match self {
            Ok(_) => Verdict::Accepted,
            Err(_) => Verdict::Refused(None),
        }
    }
}

impl Report for bool {
    fn verdict(self) -> Verdict {
        if self {
            Verdict::Accepted
        } else {
            Verdict::Refused(None)
        }
    }
}

fn verdict(r: impl Report) -> Verdict {
    r.verdict()
}

/// An instance that was finalized, with what it had made before.
struct Dead {
    inst: Instance,
    buf: SymBuf<u64>,
    ibuf: SymBuf<i64>,
    team: Team,
    ctx: Context,
    /// Buffers for the calls that consume or resize one.
    spares: Mutex<Vec<SymBuf<u64>>>,
}

impl Dead {
    fn spare(&self) -> SymBuf<u64> {
        self.spares
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .expect("a spare buffer of the finalized instance for each call that consumes one")
    }
}

/// What the generated calls work on.
struct Fixture {
    inst: Instance,
    buf: SymBuf<u64>,
    buf2: SymBuf<u64>,
    ibuf: SymBuf<i64>,
    /// A buffer of another live instance.
    foreign: SymBuf<u64>,
    other: Instance,
    team: Team,
    dead_team: Team,
    ctx: Context,
    dead_ctx: Context,
    dead: Dead,
    pe: u32,
    /// The number of PEs.
    bad_pe: u32,
    src: Vec<u64>,
    long_src: Vec<u64>,
    /// Host memory in no heap.
    outside: Box<[u64; LEN]>,
    /// Host memory a kernel uses as the local side of a copy.
    local: Box<[u64; LEN]>,
    /// The stream the device-side calls' kernels run on.
    stream: Stream,
}

/// What a device-side call gets, moved into its kernel: addresses as integers, PEs, teams.
struct DeviceArgs {
    /// A symmetric buffer of `LEN` words.
    sym: usize,
    /// A symmetric signal word.
    sig: usize,
    local: usize,
    outside: usize,
    pe: u32,
    bad_pe: u32,
    /// The id of this PE's first instance, for a device call whose invalid argument is another
    /// (none today).
    #[allow(dead_code)]
    id: u64,
    /// The valid team, for a device call whose invalid argument is another (none today).
    #[allow(dead_code)]
    team: Team,
    dead_team: Team,
}

impl Fixture {
    fn fresh_buf(&self) -> SymBuf<u64> {
        self.inst
            .calloc(LEN)
            .expect("a buffer for a call that resizes or frees one")
    }

    fn not_heap(&self) -> *mut u64 {
        self.outside.as_ptr().cast_mut()
    }

    fn device_args(&self) -> DeviceArgs {
        DeviceArgs {
            sym: self.buf2.as_ptr() as usize,
            sig: self.ibuf.as_ptr() as usize,
            local: self.local.as_ptr() as usize,
            outside: self.outside.as_ptr() as usize,
            pe: self.pe,
            bad_pe: self.bad_pe,
            id: self.inst.id(),
            team: self.team.clone(),
            dead_team: self.dead_team.clone(),
        }
    }

    /// Runs `call` in a kernel of one block of the first instance and waits for it; a launch
    /// that fails (a panic on the simulated core) is reported as the panic.
    fn kernel(&self, call: impl Fn(&mut Device<'_>) -> Verdict + Send + Sync + 'static) -> Verdict {
        let slot = Arc::new(Mutex::new(None));
        let out = slot.clone();
        let ran = self.inst.launch(&self.stream, "bad_input", 1, move |d| {
            *out.lock().unwrap_or_else(|p| p.into_inner()) = Some(call(d));
            Ok(())
        });
        self.waited(ran, &slot)
    }

    /// [`Fixture::kernel`] for a kernel built with `MULTI_INSTANCE`, whose block starts with no
    /// instance selected.
    fn multi_kernel(
        &self,
        call: impl Fn(&mut MultiDevice<'_>) -> Verdict + Send + Sync + 'static,
    ) -> Verdict {
        let slot = Arc::new(Mutex::new(None));
        let out = slot.clone();
        let ran = shmem::launch_multi_instance(&self.stream, "bad_input", 1, move |d| {
            *out.lock().unwrap_or_else(|p| p.into_inner()) = Some(call(d));
            Ok(())
        });
        self.waited(ran, &slot)
    }

    /// The verdict a kernel's block left in `slot`, once the launch `ran` has run.
    fn waited(&self, ran: shmem::Result<()>, slot: &Mutex<Option<Verdict>>) -> Verdict {
        let ran = ran.and_then(|()| self.stream.synchronize());
        let v = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        match (ran, v) {
            (_, Some(v)) => v,
            (Err(e), None) => Verdict::Panicked(format!("the launch failed: {e}")),
            (Ok(()), None) => Verdict::Panicked("the kernel never ran".into()),
        }
    }
}

/// The case.
pub fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "bad_input::every_rust_api_entry_refuses_each_invalid_argument",
            run,
        )
        .pes(&[2])
        .timeout(300)
        .needs(&[Need::HostAtomics, Need::HostMapping, Need::SimulatedCores]),
    ]
}

/// A checksum of this PE's heap of `inst` from heap offset `from` (the first user block: below
/// it lies the reserve where barriers and collectives keep their flags) to its end, free space
/// included (FNV-1a over 64-bit words).
fn heap_sum(inst: &Instance, from: usize) -> u64 {
    let words = (inst.heap_size() - from) / 8;
    // SAFETY: the heap is `heap_size` mapped bytes from `heap_base`; `from` is a block's
    // offset, 8-byte aligned; no PE writes there while the checksum runs (barriers before and
    // after).
    let heap =
        unsafe { std::slice::from_raw_parts(inst.heap_base().add(from).cast::<u64>(), words) };
    heap.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &w| {
        (h ^ w).wrapping_mul(0x100_0000_01b3)
    })
}

fn run(c: &Ctx) -> Outcome {
    let inst = c.world()?;
    let members: Vec<u32> = (0..c.n_pes).collect();
    let other = Instance::init(&attrs_for(c, 1, &members).expect("every PE is a member"))?;
    let gone = Instance::init(&attrs_for(c, 2, &members).expect("every PE is a member"))?;
    let dead = Dead {
        buf: gone.calloc(LEN)?,
        ibuf: gone.calloc(LEN)?,
        team: gone.team_world(),
        ctx: gone.ctx_create(CtxOptions::NONE)?,
        spares: Mutex::new(
            (0..SPARES)
                .map(|_| gone.calloc(LEN))
                .collect::<Result<_, _>>()?,
        ),
        inst: gone.clone(),
    };
    gone.finalize()?;
    let world = inst.team_world();
    let dead_team = world
        .split_strided(0, 1, c.n_pes as i32, TeamConfig::default())?
        .expect("every PE is in the team");
    dead_team.clone().destroy()?;
    let dead_ctx = inst.ctx_create(CtxOptions::NONE)?;
    dead_ctx.clone().destroy()?;
    let f = Fixture {
        buf: inst.calloc(LEN)?,
        buf2: inst.calloc(LEN)?,
        ibuf: inst.calloc(LEN)?,
        foreign: other.calloc(LEN)?,
        team: world,
        dead_team,
        ctx: inst.ctx_create(CtxOptions::NONE)?,
        dead_ctx,
        dead,
        pe: (c.pe + 1) % c.n_pes,
        bad_pe: c.n_pes,
        src: vec![7; LEN],
        long_src: vec![7; LEN + 1],
        outside: Box::new([0; LEN]),
        local: Box::new([0; LEN]),
        stream: inst.create_stream()?,
        other,
        inst,
    };
    // Each instance's first block starts its user area.
    let from = [f.buf.offset(), f.foreign.offset()];
    let sums = |f: &Fixture| [heap_sum(&f.inst, from[0]), heap_sum(&f.other, from[1])];
    let meet = |f: &Fixture| -> shmem::Result<()> {
        f.inst.default_ctx().quiet()?;
        f.ctx.quiet()?;
        f.inst.barrier_all()?;
        f.other.barrier_all()
    };
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    for call in CALLS {
        meet(&f)?;
        let before = sums(&f);
        meet(&f)?;
        let v = std::panic::catch_unwind(AssertUnwindSafe(|| (call.run)(&f))).unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Verdict::Panicked(msg)
        });
        meet(&f).map_err(|e| {
            Failure(format!(
                "after {} with an invalid {} ({:?}), the PEs no longer meet: {e}",
                call.entry, call.arg, call.class
            ))
        })?;
        if let Err(why) = judge(call, &v) {
            failures.push(format!(
                "{} ({:?}, {}): {why}",
                call.entry, call.class, call.arg
            ));
        }
        if sums(&f) != before {
            failures.push(format!(
                "{} ({:?}, {}): a heap changed",
                call.entry, call.class, call.arg
            ));
        }
    }
    std::panic::set_hook(hook);
    if !failures.is_empty() {
        return Err(Failure(format!(
            "{} of {} generated calls misbehaved:\n{}",
            failures.len(),
            CALLS.len(),
            failures.join("\n")
        )));
    }
    let Fixture {
        inst,
        buf,
        buf2,
        ibuf,
        foreign,
        other,
        ctx,
        ..
    } = f;
    ctx.destroy()?;
    for b in [buf, buf2] {
        b.free()?;
    }
    ibuf.free()?;
    foreign.free()?;
    other.finalize()?;
    inst.finalize()?;
    Ok(())
}

/// The calls whose docs say they accept the value the generator calls invalid, and where.
pub const DOCUMENTED_ACCEPTS: &[(&str, Class, &str)] = &[
    (
        "Instance::finalize",
        Class::State,
        "finalising a finalised instance succeeds and does nothing",
    ),
    (
        "CtxRef::view_at",
        Class::Handle,
        "a view on a destroyed context is made, and every operation on it refuses",
    ),
    (
        "CtxRef::elem_at",
        Class::Handle,
        "an element on a destroyed context is made, and every operation on it refuses",
    ),
];

/// Whether `v` is what the method documents for an invalid argument of `call`'s class.
fn judge(call: &Call, v: &Verdict) -> Result<(), String> {
    if DOCUMENTED_ACCEPTS
        .iter()
        .any(|&(entry, class, _)| entry == call.entry && class == call.class)
    {
        return Ok(());
    }
    let allocates = [
        "::malloc",
        "::calloc",
        "::align",
        "::realloc",
        "malloc_raw",
        "with_hints",
    ]
    .iter()
    .any(|a| call.entry.contains(a));
    match v {
        Verdict::Accepted => Err("accepted".into()),
        Verdict::Panicked(_) if call.panics => Ok(()),
        Verdict::Panicked(msg) => Err(format!("panicked, and its docs have no # Panics: {msg}")),
        Verdict::Refused(None) => Ok(()),
        Verdict::Refused(Some(code)) => {
            let fits = match call.class {
                Class::State => *code == Code::NotInited,
                Class::Size if allocates => {
                    matches!(
                        code,
                        Code::InvalidParam | Code::InvalidValue | Code::MallocFailed
                    )
                }
                _ => matches!(code, Code::InvalidParam | Code::InvalidValue),
            };
            if fits {
                Ok(())
            } else {
                Err(format!("refused with {code:?}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coverage: (entry, class) pairs with a generated call over the pairs the generator
    /// found, and what it made no call for.
    #[test]
    fn coverage_of_the_generated_calls() {
        use std::collections::BTreeSet;
        let tested: BTreeSet<(&str, Class)> = CALLS.iter().map(|c| (c.entry, c.class)).collect();
        let entries: BTreeSet<&str> = CALLS.iter().map(|c| c.entry).collect();
        // A class the generator found but made no call for is an applicable pair left out.
        let left_out = NOT_GENERATED.iter().filter(|(_, c, _)| c.is_some()).count();
        let mut report = format!(
            "{} calls; {} (entry, class) pairs tested of {} applicable, over {} entries\n\
             not generated (entries without a class are out of scope or have nothing to refuse with):\n",
            CALLS.len(),
            tested.len(),
            tested.len() + left_out,
            entries.len()
        );
        for (entry, class, why) in NOT_GENERATED {
            report += &format!("  {entry} {class:?}: {why}\n");
        }
        insta::assert_snapshot!(report);
    }
}
