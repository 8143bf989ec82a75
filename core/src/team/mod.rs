//! Teams: strided sets of an instance's PEs, with their own PE numbering, synchronisation slot
//! and collective scratch area.
//!
//! Every instance has the world team (all its PEs) and the shared team (the PEs that can load
//! and store each other's heaps: on the simulator, also all of them). Teams are split from a
//! parent collectively: every parent member calls the split with the same arguments, members
//! of the new team get a [`Team`], the others `None`.
//!
//! A team's *index* selects its slot in the sync pool of the reserved heap area and its
//! scratch area beyond the heap. The index is agreed by the parent's members (CANN allocates it
//! locally, so members with different split histories disagree about it): each member
//! contributes the indices it uses, and the team takes the lowest one free on all of them.
//!
//! The barrier is a tree of radix [`RADIX`]: every PE waits for its children to signal-add one
//! to its *arrival* word, signals its parent, waits for the parent to signal-set its *release*
//! word to the barrier's epoch, and releases its own children. Counts and epochs only grow, so
//! no word is reset between barriers. With up to `RADIX + 1` PEs the tree is a single root: two
//! phases, which matters when PEs outnumber cores (every phase costs each waiting PE one trip
//! through the scheduler). Only `signal` and local waits are used, so it runs on any transport.

use std::sync::Arc;

use shmem_backend::Pe;

use crate::coll::ReduceOp;
use crate::ctx::{Context, CtxOptions, CtxRef};
use crate::error::{Error, Result};
use crate::fabric::Queue;
use crate::heap::layout::SYNC_ARRAY_SIZE;
use crate::instance::Instance;

pub(crate) mod hang;
pub(crate) mod state;

pub(crate) use hang::CollWait;

pub use state::{MAX_TEAMS, TeamConfig};
pub(crate) use state::{
    Members, RADIX, SCRATCH_PER_TEAM, SHARED_INDEX, TeamState, WORLD_INDEX, at_least, words,
};

/// A team of one instance. Cloning gives another handle to the same team.
#[derive(Clone)]
pub struct Team {
    pub(crate) inst: Instance,
    pub(crate) state: Arc<TeamState>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("instance", &self.inst.id())
            .field("index", &self.state.index)
            .field("members", &self.state.members)
            .field("my_pe", &self.state.my_rank)
            .finish()
    }
}

impl PartialEq for Team {
    fn eq(&self, other: &Team) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

impl Instance {
    /// The world team (`SHMEM_TEAM_WORLD`): every PE of the instance, numbered as in the
    /// instance.
    pub fn team_world(&self) -> Team {
        Team {
            inst: self.clone(),
            state: self.inner.teams.world.clone(),
        }
    }

    /// The shared team (`SHMEM_TEAM_SHARED`): the PEs whose heaps this PE can load and store
    /// through [`Instance::ptr`]. On the simulator that is every PE; on a transport without a
    /// host mapping of peers' heaps (Ascend, and `SHMEM_PROFILE=cann`), this PE alone.
    pub fn team_shared(&self) -> Team {
        Team {
            inst: self.clone(),
            state: self.inner.teams.shared.clone(),
        }
    }
}

impl Team {
    /// The instance the team belongs to.
    pub fn instance(&self) -> &Instance {
        &self.inst
    }

    /// This PE's number in the team (`shmem_team_my_pe`).
    pub fn my_pe(&self) -> u32 {
        self.state.my_rank
    }

    /// The number of PEs in the team (`shmem_team_n_pes`).
    pub fn n_pes(&self) -> u32 {
        self.state.members.size
    }

    /// The team's agreed index (its sync slot), the same on every member.
    pub fn index(&self) -> u32 {
        self.state.index
    }

    /// The team's configuration (`shmem_team_get_config`).
    pub fn config(&self) -> TeamConfig {
        self.state.config
    }

    /// Whether the team is live (not destroyed).
    pub fn is_live(&self) -> bool {
        self.state.is_live() && self.inst.is_initialized()
    }

    pub(crate) fn check_live(&self) -> Result<()> {
        self.inst.check_live()?;
        self.state.check_live()
    }

    /// The instance PE of team PE `pe`.
    pub fn to_instance_pe(&self, pe: Pe) -> Result<Pe> {
        self.inst.check_live()?;
        self.state.to_instance_pe(pe)
    }

    /// The number in `dest` of this team's PE `pe` (`shmem_team_translate_pe`), or `None` when
    /// `pe` is not a PE of this team or not a member of `dest`.
    pub fn translate_pe(&self, pe: Pe, dest: &Team) -> Option<Pe> {
        if !self.is_live() || !dest.is_live() || pe >= self.state.members.size {
            return None;
        }
        if self.inst.id() != dest.inst.id() {
            return None;
        }
        dest.state.members.rank_of(self.state.members.pe(pe))
    }

    /// Completes this PE's operations on the default context and waits for every member
    /// (`shmem_team_sync` after a quiet; CANN's `aclshmem_barrier`).
    pub fn barrier(&self) -> Result<()> {
        self.check_live()?;
        self.t().quiet_before_barrier(&self.inst.inner.hot.queue)?;
        self.run_barrier(&self.inst.inner.sync_queue, "barrier")
    }

    /// Waits for every member, without completing outstanding operations (`shmem_team_sync`).
    pub fn sync(&self) -> Result<()> {
        self.check_live()?;
        self.run_barrier(&self.inst.inner.sync_queue, "sync")
    }

    /// Enqueues a barrier over the team on the stream of `ctx` (CANN's
    /// `aclshmemx_barrier_on_stream`): it completes the work enqueued on the stream before it
    /// and waits there for every member, and work enqueued after it runs only once every member
    /// has arrived. `ctx` must be made from a stream
    /// ([`Instance::stream_ctx`]) of this team's instance.
    pub fn barrier_on(&self, ctx: &Context) -> Result<()> {
        self.check_live()?;
        let c: CtxRef<'_> = ctx.as_ref();
        if !c.is_stream() || !c.inst.same(&self.inst) {
            return Err(Error::InvalidParam(format!(
                "barrier_on: the context is not made from a stream of instance {}",
                self.inst.id()
            )));
        }
        c.usable()?;
        self.run_barrier(c.queue(), "barrier_on_stream")
    }

    /// A barrier over the team on `q`, named `call` in hang reports and timeouts.
    pub(crate) fn run_barrier(&self, q: &Queue, call: &str) -> Result<()> {
        let what = CollWait {
            team: self,
            what: call,
        };
        barrier_over(&self.inst, &self.state, q, &what)
    }

    /// Creates a context whose operations name PEs by their number in this team
    /// (`shmem_team_create_ctx`).
    pub fn create_ctx(&self, options: CtxOptions) -> Result<Context> {
        self.check_live()?;
        self.inst.new_ctx(Some(self.state.clone()), options, None)
    }

    /// Splits this team (`shmem_team_split_strided`): the new team has the `size` PEs of this
    /// team numbered `start, start + stride, …`. Collective over this team's members, which all
    /// pass the same arguments; members of the new team get it, the others `None`.
    ///
    /// Errors follow CANN's checks (`INVALID_PARAM` for a start outside this team, a size of 0
    /// or larger than this team, a stride below 1, or members beyond the instance) and, when
    /// every team index is taken, `INNER_ERROR`. Parents of any size can be split: the index
    /// agreement is a reduction of a 128-bit map, not a gather.
    pub fn split_strided(
        &self,
        start: i32,
        stride: i32,
        size: i32,
        config: TeamConfig,
    ) -> Result<Option<Team>> {
        self.check_live()?;
        let members = self.strided_members(start, stride, size)?;
        Ok(self.split_many(&[(config, vec![members])])?.pop().flatten())
    }

    /// Splits this team into a 2-D grid (`shmem_team_split_2d`): rows ("x teams") of `xrange`
    /// consecutive PEs (the last one shorter if the size is not a multiple) and columns ("y
    /// teams") of the PEs with the same position in their row. Collective over this team;
    /// every member gets its row and its column. `xrange` above the team size is clamped to it.
    pub fn split_2d(
        &self,
        xrange: i32,
        xconfig: TeamConfig,
        yconfig: TeamConfig,
    ) -> Result<(Option<Team>, Option<Team>)> {
        self.check_live()?;
        if xrange <= 0 {
            return Err(Error::InvalidParam(format!(
                "xrange {xrange} must be positive"
            )));
        }
        let size = self.state.members.size as i32;
        let x = xrange.min(size);
        let rows = (size + x - 1) / x;
        let row_teams = (0..rows)
            .map(|i| self.strided_members(i * x, 1, x.min(size - i * x)))
            .collect::<Result<Vec<_>>>()?;
        let col_teams = (0..x)
            .map(|j| self.strided_members(j, x, size / x + i32::from(j < size % x)))
            .collect::<Result<Vec<_>>>()?;
        // The rows are disjoint, and so are the columns: each axis takes one team index.
        let mut got = self.split_many(&[(xconfig, row_teams), (yconfig, col_teams)])?;
        let yt = got.pop().flatten();
        Ok((got.pop().flatten(), yt))
    }

    /// The members of a strided split of this team, checked as CANN checks them; under the
    /// OpenSHMEM profile, OpenSHMEM 1.6's triplets are valid too: a negative stride (a team in
    /// reverse order, from `start` down) and a stride of 0 for a team of one PE.
    fn strided_members(&self, start: i32, stride: i32, size: i32) -> Result<Members> {
        let max = self.inst.inner.limits.max_pes.min(i32::MAX as u32) as i32;
        let parent = self.state.members;
        if start >= max || stride >= max || size > max {
            return Err(Error::InvalidParam(format!(
                "start {start}, stride {stride} or size {size} exceeds the PE limit {max}"
            )));
        }
        let cann = self.inst.inner.profile != crate::ApiProfile::OpenShmem;
        if start < 0
            || start >= parent.size as i32
            || size <= 0
            || size > parent.size as i32
            || (cann && stride < 1)
            || (stride == 0 && size != 1)
        {
            return Err(Error::InvalidParam(format!(
                "start {start}, stride {stride}, size {size} do not describe PEs of a team of {} PEs (start in 0..size, size >= 1, {})",
                parent.size,
                if cann {
                    "stride >= 1"
                } else {
                    "stride 0 only for one PE"
                }
            )));
        }
        let last = i64::from(start) + i64::from(stride) * (i64::from(size) - 1);
        if !(0..i64::from(parent.size)).contains(&last) {
            return Err(Error::InvalidParam(format!(
                "the last PE of the split, {last}, lies outside the parent team of {} PEs",
                parent.size
            )));
        }
        let stride = i32::try_from(i64::from(parent.stride) * i64::from(stride)).map_err(|_| {
            Error::InvalidParam(format!(
                "a stride of {stride} in a team of stride {}",
                parent.stride
            ))
        })?;
        Ok(Members {
            start: parent.pe(start as u32),
            stride,
            size: size as u32,
        })
    }

    /// Combines every member's `mine` with `op` (an in-place reduction of two words kept in the
    /// team's own sync slot at `word`), so that agreements cost the same whatever the team's
    /// size (a gather of every member's bitmap would not fit the scratch beyond 512 PEs).
    fn agree(&self, word: u64, op: ReduceOp, mine: [u64; 2]) -> Result<[u64; 2]> {
        let at = self.word(word);
        let view = self.inst.view_of_heap::<u64>(at, 2)?;
        view.put(&mine, self.inst.my_pe())?;
        self.reduce(op, view, view)?;
        let mut out = [0u64; 2];
        view.get(&mut out, self.inst.my_pe())?;
        Ok(out)
    }

    /// Creates every team of `specs` at once and returns, for each spec, the team of it this PE
    /// is a member of, if any. A spec is a configuration and disjoint member sets (the rows of
    /// a 2-D split), which share one team index: no PE is in two of them.
    ///
    /// The members agree on indices that no member uses: each contributes a bitmap of the
    /// indices its live teams use or its splits in progress hold, and all take the first free
    /// ones of the union. Splits on different parents may run at the same time from different
    /// threads (no lock is held across a collective), so each member then reserves the chosen
    /// indices locally, and a second round tells everyone whether every member could; if one
    /// could not (a concurrent split reserved an index first), all give their reservations back
    /// and start over after a short random pause. Then one sync.
    fn split_many(&self, specs: &[(TeamConfig, Vec<Members>)]) -> Result<Vec<Option<Team>>> {
        self.enter()?;
        let teams = &self.inst.inner.teams;
        let mut attempt = 0u32;
        let chosen = loop {
            let taken = bytemuck::cast(teams.indices().taken_bits());
            let union: [u8; MAX_TEAMS / 8] =
                bytemuck::cast(self.agree(words::SPLIT, ReduceOp::Or, taken)?);
            let chosen: Vec<u32> = (0..MAX_TEAMS as u32)
                .filter(|&i| union[i as usize / 8] & (1 << (i % 8)) == 0)
                .take(specs.len())
                .collect();
            if chosen.len() < specs.len() {
                return Err(Error::Inner(format!(
                    "no free team index: an instance can have at most {MAX_TEAMS} teams at once (the world and shared teams included)"
                )));
            }
            let reserved = teams.indices().reserve(&chosen);
            let all_reserved = self
                .agree(words::SPLIT, ReduceOp::And, [u64::from(reserved), 1])
                .inspect_err(|_| {
                    if reserved {
                        teams.indices().release(&chosen);
                    }
                })?;
            if all_reserved[0] == 1 {
                break chosen;
            }
            if reserved {
                teams.indices().release(&chosen);
            }
            attempt += 1;
            // Concurrent splits that took the same index on different PEs would otherwise
            // retry in lockstep.
            let cap = 50u64 << attempt.min(6);
            std::thread::sleep(std::time::Duration::from_micros(rand::random_range(0..cap)));
        };
        let me = self.inst.my_pe();
        let heap_size = self.inst.heap_size();
        let reserved = self.inst.inner.heap.reserved();
        let mut out = Vec::with_capacity(specs.len());
        {
            let mut indices = teams.indices();
            for ((config, disjoint), &index) in specs.iter().zip(&chosen) {
                // This PE is in at most one of the disjoint teams of a spec.
                let mine = disjoint
                    .iter()
                    .find_map(|m| m.rank_of(me).map(|rank| (m, rank)));
                out.push(mine.map(|(members, rank)| {
                    indices.used[index as usize] = true;
                    TeamState::new(*members, rank, index, reserved, heap_size, *config)
                }));
            }
            indices.release(&chosen);
        }
        // A reused index may hold an old team's counts: clear this PE's slot before anyone uses it.
        for state in out.iter().flatten() {
            // SAFETY: the slot lies in this PE's heap's reserved area.
            unsafe {
                self.inst.fabric().fill(
                    &self.inst.inner.sync_queue,
                    me,
                    state.slot as usize,
                    0,
                    SYNC_ARRAY_SIZE as usize,
                )
            }?;
        }
        self.sync()?;
        Ok(out
            .into_iter()
            .map(|s| {
                s.map(|state| Team {
                    inst: self.inst.clone(),
                    state: Arc::new(state),
                })
            })
            .collect())
    }

    /// Destroys the team (`shmem_team_destroy`). Collective over its members. The world and
    /// shared teams cannot be destroyed (CANN lets the world team be destroyed; that breaks
    /// every later call, so it is refused here).
    pub fn destroy(self) -> Result<()> {
        self.check_live()?;
        if self.state.index == WORLD_INDEX || self.state.index == SHARED_INDEX {
            return Err(Error::InvalidParam(
                "the world and shared teams cannot be destroyed".into(),
            ));
        }
        self.sync()?;
        self.state.destroyed();
        self.inst.inner.teams.indices().used[self.state.index as usize] = false;
        Ok(())
    }
}

impl Context {
    /// The team the context was created from (`shmem_ctx_get_team`); the world team for a
    /// context created from the instance.
    pub fn team(&self) -> Team {
        match &self.inner.team {
            Some(state) => Team {
                inst: self.inner.inst.clone(),
                state: state.clone(),
            },
            None => self.inner.inst.team_world(),
        }
    }
}

/// A barrier over the team of `state` (a team of `inst`) on `q`, as hang reports and timeouts
/// name it by `what`: records the entry, takes the next epoch and waits in the transport's
/// barrier. [`Team::run_barrier`] and the instance's world barrier, which makes no team handle.
#[inline]
pub(crate) fn barrier_over(
    inst: &Instance,
    state: &TeamState,
    q: &Queue,
    what: &dyn std::fmt::Display,
) -> Result<()> {
    crate::fault::point("barrier.waiting", inst.my_pe(), inst.id());
    hang::record_entry(inst, state)?;
    let b = state.next_barrier();
    // SAFETY: the members are PEs of the instance and the sync words lie in its heap's reserved
    // area, aligned (every team's slot is).
    unsafe { inst.fabric().barrier(q, &b, what) }.map_err(|e| inst.fail(e))
}
