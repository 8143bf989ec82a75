//! Contexts: independent streams of communication, each with its own completion (`quiet`) and
//! ordering (`fence`) scope.
//!
//! Every instance has a *default* context. More can be created from the instance (over the
//! world team) or from a team; a team's context numbers PEs in the team's numbering. Views of
//! symmetric memory carry the context their operations are issued on: `buf.as_slice()` uses the
//! default context, `buf.as_slice().on(&ctx)` another one.
//!
//! ```no_run
//! # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
//! use shmem::CtxOptions;
//! let buf = inst.calloc::<u64>(1024)?;
//! let ctx = inst.ctx_create(CtxOptions::PRIVATE)?;
//! let src = vec![1u64; 1024];
//! ctx.nbi(|s| s.put_nbi(buf.as_slice().on(&ctx), &src, 1))??;  // completed by the scope
//! ctx.quiet()?;                                                   // only this context's operations
//! ctx.destroy()?;
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;

use shmem_backend::Pe;

use crate::error::{Error, Result};
use crate::fabric::{Queue, Stream};
use crate::instance::Instance;
use crate::team::state::TeamState;

/// The options of a context (`SHMEM_CTX_*`), combined with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CtxOptions(pub u32);

impl CtxOptions {
    /// No options.
    pub const NONE: CtxOptions = CtxOptions(0);
    /// `SHMEM_CTX_SERIALIZED`: the program never uses the context from two threads at once.
    pub const SERIALIZED: CtxOptions = CtxOptions(1 << 0);
    /// `SHMEM_CTX_PRIVATE`: only the creating thread uses the context (checked: another thread
    /// gets an error).
    pub const PRIVATE: CtxOptions = CtxOptions(1 << 1);
    /// `SHMEM_CTX_NOSTORE`: quiet and fence on the context need not complete or order the
    /// PE's own memory stores. Every operation stays allowed; on the simulator, whose quiet
    /// and fence are the same either way, the option changes nothing.
    pub const NOSTORE: CtxOptions = CtxOptions(1 << 2);

    /// Whether every option of `other` is set.
    pub fn contains(self, other: CtxOptions) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for CtxOptions {
    type Output = CtxOptions;
    fn bitor(self, rhs: CtxOptions) -> CtxOptions {
        CtxOptions(self.0 | rhs.0)
    }
}

/// A created context. Cloning gives another handle to the same context.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<CtxInner>,
}

pub(crate) struct CtxInner {
    pub(crate) inst: Instance,
    /// The team whose PE numbering the context uses; `None` for the world.
    pub(crate) team: Option<Arc<TeamState>>,
    pub(crate) queue: Queue,
    /// The stream the context runs on, if it was made from one.
    pub(crate) stream: Option<Stream>,
    pub(crate) options: CtxOptions,
    owner: ThreadId,
    live: AtomicBool,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("instance", &self.inner.inst.id())
            .field("options", &self.inner.options)
            .field("team", &self.inner.team.as_ref().map(|t| t.index))
            .finish()
    }
}

/// The context an operation is issued on: an instance's default context or a created one.
#[derive(Clone, Copy)]
pub struct CtxRef<'a> {
    pub(crate) inst: &'a Instance,
    pub(crate) ctx: Option<&'a CtxInner>,
}

impl std::fmt::Debug for CtxRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.ctx {
            None => write!(f, "CtxRef(default of instance {})", self.inst.id()),
            Some(c) => write!(f, "CtxRef({:?} of instance {})", c.options, self.inst.id()),
        }
    }
}

impl<'a> CtxRef<'a> {
    /// The default context of `inst`.
    pub(crate) fn default_of(inst: &'a Instance) -> CtxRef<'a> {
        CtxRef { inst, ctx: None }
    }

    /// The instance.
    pub fn instance(&self) -> &'a Instance {
        self.inst
    }

    #[inline]
    pub(crate) fn queue(&self) -> &'a Queue {
        match self.ctx {
            Some(c) => &c.queue,
            None => &self.inst.inner.hot.queue,
        }
    }

    /// Checks the context may be used here and now, and translates `pe` (in the context's
    /// team numbering) to the instance's.
    #[inline(always)]
    pub(crate) fn target(&self, pe: Pe) -> Result<Pe> {
        if self.is_plain_target(pe) {
            return Ok(pe);
        }
        self.target_checked(pe)
    }

    /// The common case of [`Ctx::target`], with nothing to translate: the default context of a
    /// live instance and one of its PEs.
    #[inline(always)]
    pub(crate) fn is_plain_target(&self, pe: Pe) -> bool {
        self.ctx.is_none() && pe < self.inst.inner.hot.n_pes && self.inst.is_initialized()
    }

    #[cold]
    fn target_checked(&self, pe: Pe) -> Result<Pe> {
        self.usable()?;
        match self.ctx.and_then(|c| c.team.as_ref()) {
            None => {
                self.inst.check_pe(pe)?;
                Ok(pe)
            }
            Some(team) => team.to_instance_pe(pe),
        }
    }

    /// Checks that the instance is live and the context may be used by this thread.
    #[inline]
    pub(crate) fn usable(&self) -> Result<()> {
        self.inst.check_live()?;
        if let Some(c) = self.ctx {
            if !c.live.load(Ordering::Acquire) {
                return Err(Error::InvalidParam("the context was destroyed".into()));
            }
            if c.options.contains(CtxOptions::PRIVATE) && std::thread::current().id() != c.owner {
                return Err(Error::InvalidParam(
                    "a SHMEM_CTX_PRIVATE context used by a thread other than its creator".into(),
                ));
            }
        }
        Ok(())
    }

    /// Completes every operation issued on this context (`shmem_ctx_quiet`; on a context made
    /// from a stream, synchronises the stream).
    pub fn quiet(&self) -> Result<()> {
        self.usable()?;
        self.inst.fabric().quiet(self.queue())
    }

    /// Completes this context's operations to the PEs `pes` (numbered in the context's team;
    /// OpenSHMEM 1.6's `shmem_ctx_pe_quiet`). Every PE is checked; the simulator then completes
    /// all of the context's operations, which the specification allows.
    pub fn pe_quiet(&self, pes: &[Pe]) -> Result<()> {
        for &pe in pes {
            self.target(pe)?;
        }
        self.quiet()
    }

    /// Orders this context's puts, atomics and signals to each PE (`shmem_ctx_fence`).
    pub fn fence(&self) -> Result<()> {
        self.usable()?;
        self.inst.fabric().fence(self.queue())
    }

    /// Whether the context runs on a stream.
    pub fn is_stream(&self) -> bool {
        self.ctx.is_some_and(|c| c.stream.is_some())
    }
}

impl Context {
    /// This context as the context of an operation.
    pub fn as_ref(&self) -> CtxRef<'_> {
        CtxRef {
            inst: &self.inner.inst,
            ctx: Some(&self.inner),
        }
    }

    /// The context's options.
    pub fn options(&self) -> CtxOptions {
        self.inner.options
    }

    /// Completes every operation issued on this context.
    pub fn quiet(&self) -> Result<()> {
        self.as_ref().quiet()
    }

    /// Orders this context's puts, atomics and signals to each PE.
    pub fn fence(&self) -> Result<()> {
        self.as_ref().fence()
    }

    /// Destroys the context (`shmem_ctx_destroy`), completing its outstanding operations
    /// first. Other handles to it then fail with an error.
    pub fn destroy(self) -> Result<()> {
        let r = self.quiet();
        self.inner.live.store(false, Ordering::Release);
        r
    }
}

impl Instance {
    /// The default context (`SHMEM_CTX_DEFAULT`).
    pub fn default_ctx(&self) -> CtxRef<'_> {
        CtxRef::default_of(self)
    }

    /// Creates a context over the world team (`shmem_ctx_create`).
    pub fn ctx_create(&self, options: CtxOptions) -> Result<Context> {
        self.new_ctx(None, options, None)
    }

    /// A new stream of this instance's device: the simulator's executor on `sim`
    /// ([`Stream::new`]), an `aclrtStream` of the NPU on `hw` (destroyed with its last
    /// handle). Contexts made from it ([`Instance::stream_ctx`]) run CANN's `_on_stream` calls.
    ///
    /// ```
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let stream = inst.create_stream()?;
    /// let ctx = inst.stream_ctx(&stream)?;
    /// # let _ = ctx; Ok(()) }
    /// ```
    pub fn create_stream(&self) -> Result<Stream> {
        self.check_live()?;
        self.fabric().new_stream()
    }

    /// Creates a context whose operations run on `stream`, in stream order, and complete when
    /// the stream is synchronised (CANN's `_on_stream` calls: a put on the context is
    /// `aclshmemx_putmem_on_stream`, its quiet synchronises the stream, and a team barrier on
    /// it is `aclshmemx_barrier_on_stream`).
    ///
    /// ```no_run
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let stream = shmem::Stream::new();
    /// let ctx = inst.stream_ctx(&stream)?;
    /// let buf = inst.calloc::<u64>(8)?;
    /// buf.as_slice().on(&ctx).put(&[7; 8], (inst.my_pe() + 1) % inst.n_pes())?; // enqueued
    /// stream.synchronize()?;                                                     // done
    /// # Ok(()) }
    /// ```
    pub fn stream_ctx(&self, stream: &Stream) -> Result<Context> {
        self.new_ctx(None, CtxOptions::NONE, Some(stream))
    }

    pub(crate) fn new_ctx(
        &self,
        team: Option<Arc<TeamState>>,
        options: CtxOptions,
        stream: Option<&Stream>,
    ) -> Result<Context> {
        self.check_live()?;
        let queue = match stream {
            None => self.fabric().new_queue(),
            Some(s) => {
                self.require(|c| c.streams, "contexts on streams")?;
                self.fabric().stream_queue(s)?
            }
        };
        let known = CtxOptions::SERIALIZED | CtxOptions::PRIVATE | CtxOptions::NOSTORE;
        if options.0 & !known.0 != 0 {
            return Err(Error::InvalidParam(format!(
                "unknown context options {:#x}",
                options.0 & !known.0
            )));
        }
        Ok(Context {
            inner: Arc::new(CtxInner {
                inst: self.clone(),
                team,
                queue,
                stream: stream.cloned(),
                options,
                owner: std::thread::current().id(),
                live: AtomicBool::new(true),
            }),
        })
    }
}
