//! Who a team's collective waits for: every member counts the collective calls it enters on
//! the team in its own sync word ([`words::ENTERED`]), so that a member stuck in a barrier or
//! a collective can name, in its hang report or timeout, the members that have not reached the
//! call yet.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use shmem_backend::{Local, LocalMut, Pe};

use super::Team;
use super::state::{SHARED_INDEX, TeamState, WORLD_INDEX, words};
use crate::error::Result;
use crate::instance::Instance;

/// Records that this PE enters one more collective call on the team of `state`, of `inst`:
/// the count goes to the team's ENTERED word, which only hang reports read (so no waiter is
/// woken for it), with a plain store where the transport maps this PE's segment on the host.
#[inline]
pub(crate) fn record_entry(inst: &Instance, state: &TeamState) -> Result<()> {
    inst.check_peers()?;
    let n = state.enter();
    let offset = (state.slot + words::ENTERED) as usize;
    match inst.inner.own_mapping {
        Some(base) => {
            // SAFETY: the team's ENTERED word lies in this PE's reserved area, 8-byte aligned,
            // inside the segment the host mapping covers; other PEs read it only atomically.
            unsafe { AtomicU64::from_ptr((base + offset) as *mut u64) }.store(n, Ordering::Relaxed);
            Ok(())
        }
        // SAFETY: as above; the put is to this PE.
        None => unsafe {
            inst.fabric().put(
                &inst.inner.sync_queue,
                inst.my_pe(),
                offset,
                Local::Host(&n.to_ne_bytes()),
            )
        },
    }
}

/// What a barrier over the world team waits for, displayed as [`CollWait`] (which needs a
/// [`Team`] handle, made only when a wait is reported).
pub(crate) struct WorldWait<'a> {
    pub inst: &'a Instance,
    pub what: &'a str,
}

impl fmt::Display for WorldWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let team = self.inst.team_world();
        CollWait {
            team: &team,
            what: self.what,
        }
        .fmt(f)
    }
}

impl Team {
    /// Records that this PE enters one more collective call on the team.
    pub(crate) fn enter(&self) -> Result<()> {
        record_entry(&self.inst, &self.state)
    }

    /// The members (instance PEs) that have entered fewer collective calls on the team than
    /// this PE, so are not yet in the one this PE waits in.
    pub(crate) fn not_arrived(&self) -> Vec<Pe> {
        let mine = self.state.entered();
        (0..self.state.members.size)
            .filter(|&r| r != self.state.my_rank)
            .filter(|&r| {
                let mut n = [0u8; 8];
                // SAFETY: rank `r` is a member, and its ENTERED word lies in its reserved
                // area, aligned.
                let read = unsafe {
                    self.t().get(
                        self.q(),
                        self.pe_of(r),
                        self.word(words::ENTERED),
                        LocalMut::Host(&mut n),
                    )
                };
                read.is_ok() && u64::from_ne_bytes(n) < mine
            })
            .map(|r| self.pe_of(r))
            .collect()
    }

    /// The team's name in reports: `world`, `shared` or its index.
    fn name(&self) -> String {
        match self.state.index {
            WORLD_INDEX => "world".into(),
            SHARED_INDEX => "shared".into(),
            i => format!("index {i}"),
        }
    }
}

/// What a collective of a team waits for, as hang reports and timeouts name it:
/// `barrier_all (instance 0, team world) for PE 1, PE 3`. The members not arrived are read
/// when it is displayed, that is only when a wait is reported.
pub(crate) struct CollWait<'a> {
    pub team: &'a Team,
    /// The call, or what inside it is waited for.
    pub what: &'a str,
}

impl fmt::Display for CollWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.team;
        write!(
            f,
            "{} (instance {}, team {})",
            self.what,
            t.inst.id(),
            t.name()
        )?;
        let missing = t.not_arrived();
        if missing.is_empty() {
            return Ok(());
        }
        f.write_str(" for ")?;
        for (i, &pe) in missing.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "PE {pe}")?;
            let state = t.inst.fabric().peer_pid(pe).and_then(unusual_state);
            if let Some(state) = state {
                write!(f, " ({state})")?;
            }
        }
        Ok(())
    }
}

/// What process `pid` is doing, when that explains why it does not arrive: stopped (SIGSTOP,
/// a terminal's ^Z), stopped by a debugger, exited, or in an uninterruptible wait. `None` for a
/// running or sleeping process, or one that cannot be read.
fn unusual_state(pid: u32) -> Option<&'static str> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the command name, which is in parentheses and may contain any byte.
    let state = stat.rsplit_once(") ")?.1.chars().next()?;
    Some(match state {
        'T' => "stopped",
        't' => "stopped by a debugger",
        'Z' | 'X' => "exited",
        'D' => "in an uninterruptible wait",
        _ => return None,
    })
}
