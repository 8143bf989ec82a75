//! Prefix sums along a team's ranks (OpenSHMEM 1.6 `shmem_sum_inscan` and `shmem_sum_exscan`).
//!
//! A chain: rank `r` waits until rank `r - 1` has its inclusive prefix in its `dest`, reads it,
//! tells `r - 1` it has, adds its own `source` (read before anything is written, so `dest` and
//! `source` may be the same array), leaves its inclusive prefix in its own `dest`, and tells
//! `r + 1`. A rank returns only once `r + 1` has read its `dest`, and then, for the exclusive
//! scan, leaves the exclusive prefix there (zero on rank 0). `n - 1` steps, so the cost grows
//! with the team; the sums are taken in rank order, the same on every run.

use shmem_backend::SignalOp;

use super::check_len;
use super::reduce::{ReduceOp, Reducible};
use crate::error::{Error, Result};
use crate::sym::SymSlice;
use crate::team::Team;
use crate::team::state::words;

impl Team {
    /// `dest[i]` on rank `r` becomes the sum of `source[i]` over ranks `0..=r`
    /// (`shmem_sum_inscan`, OpenSHMEM 1.6). Collective over the team; `dest` and `source` have
    /// the same length and may be the same array.
    pub fn sum_inscan<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.scan(dest, source, true)
    }

    /// `dest[i]` on rank `r` becomes the sum of `source[i]` over ranks `0..r`, and zero on rank
    /// 0 (`shmem_sum_exscan`, OpenSHMEM 1.6). As [`Team::sum_inscan`] otherwise.
    pub fn sum_exscan<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.scan(dest, source, false)
    }

    fn scan<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
        inclusive: bool,
    ) -> Result<()> {
        self.coll_prologue([dest.home, source.home])?;
        check_len("scan", "source", source.len(), dest.len())?;
        if !T::supports(ReduceOp::Sum) {
            return Err(Error::InvalidParam(format!(
                "{} has no sum",
                std::any::type_name::<T>()
            )));
        }
        let (me, n) = (self.my_pe(), self.n_pes());
        let my_pe = self.inst.my_pe();
        let mine = source.to_vec(my_pe)?;
        let mut c = self.state.coll();
        c.scans += 1;
        let seq = c.scans;
        let before = if me == 0 {
            vec![T::zeroed(); mine.len()]
        } else {
            self.wait_word(words::SCAN, seq, "the previous member's prefix of a scan")?;
            let prev = dest.to_vec(self.pe_of(me - 1))?;
            self.signal_word(me - 1, words::SCAN_ACK, SignalOp::Set, seq)?;
            prev
        };
        let through: Vec<T> = if me == 0 {
            mine
        } else {
            before
                .iter()
                .zip(&mine)
                .map(|(a, b)| T::combine(ReduceOp::Sum, *a, *b))
                .collect()
        };
        dest.put(&through, my_pe)?;
        if me + 1 < n {
            self.signal_word(me + 1, words::SCAN, SignalOp::Set, seq)?;
            self.wait_word(
                words::SCAN_ACK,
                seq,
                "the next member to read a scan's prefix",
            )?;
        }
        if !inclusive {
            dest.put(&before, my_pe)?;
        }
        Ok(())
    }
}
