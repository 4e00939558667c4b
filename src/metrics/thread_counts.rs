//! Decision counters kept per thread, so that counting a decision on the
//! authorizer's fast path costs no locked instruction.
//!
//! A shared `AtomicU64::fetch_add` is a `lock xadd`: measured on the
//! fast-path bench it added about 10 ns to a 46 ns decision, most of the
//! budget issue #15 gives the whole audit-and-metrics feature. Here each
//! thread that decides owns a [`Block`] of counters that only it writes, with
//! a relaxed load and a relaxed store (two plain `mov`s); a snapshot sums
//! every block. A store by the owner and a load by a reader never tear (the
//! values are atomics), and each counter only grows, so a snapshot taken
//! while threads decide sees every decision finished before it began, as a
//! shared counter would.
//!
//! Blocks are never freed while their [`ThreadCounts`] lives: a thread that
//! exits gives its block back (its counts stay in it, and stay in the sums),
//! and the next thread that decides takes it over. Memory is therefore
//! bounded by the largest number of threads that ever decided at the same
//! time, however many threads come and go (tokio's blocking pool starts and
//! ends threads all day).
//!
//! The thread's handle on its block is a const-initialised thread-local
//! without a destructor (the cheapest kind: one `fs`-relative load), holding
//! the owning instance's id and a pointer to the block. A second
//! thread-local, with a destructor, holds the `Arc`s that keep those blocks
//! alive and gives them back when the thread exits; it also clears the
//! first, so a decision made by a later thread-local destructor takes the
//! slow path and is counted in the instance's shared spill counters.
//!
//! Hand-rolled: `thread_local` (the crate) keeps a value per thread per
//! object but reads the values only through `&mut`, and sharded counters
//! (`sharded-counter`-style crates) still use locked adds.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Counters per slot (action number) and outcome.
pub(super) type Counts<const SLOTS: usize> = [[AtomicU64; 3]; SLOTS];

/// One thread's counters (or a retired thread's, until another takes them).
struct Block<const SLOTS: usize> {
    /// The [`ThreadCounts`] instance the block belongs to.
    owner: u64,
    /// Whether a live thread writes this block.
    in_use: AtomicBool,
    counts: Counts<SLOTS>,
}

/// Source of instance ids; 0 means "none yet".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The block this thread wrote last: (instance id, block). No
    /// destructor, so it can be read at any time, even while the thread's
    /// other thread-locals are being destroyed.
    static CURRENT: Cell<(u64, *const ())> = const { Cell::new((0, std::ptr::null())) };
    /// The blocks this thread owns, given back when it exits.
    static OWNED: Owned = const { Owned(RefCell::new(Vec::new())) };
}

/// The blocks a thread owns (type-erased: one per instance it decided in).
struct Owned(RefCell<Vec<Arc<dyn Release>>>);

trait Release {
    fn owner(&self) -> u64;
    fn release(&self);
    fn as_ptr(&self) -> *const ();
}

impl<const SLOTS: usize> Release for Block<SLOTS> {
    fn owner(&self) -> u64 {
        self.owner
    }
    fn release(&self) {
        // Release: the next owner's Acquire claim sees our last stores.
        self.in_use.store(false, Ordering::Release);
    }
    fn as_ptr(&self) -> *const () {
        (self as *const Self).cast()
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set((0, std::ptr::null())));
        for block in self.0.borrow().iter() {
            block.release();
        }
    }
}

/// Monotonic counters in `SLOTS × 3` cells, written per thread without
/// locked instructions and summed on read.
pub(super) struct ThreadCounts<const SLOTS: usize> {
    id: AtomicU64,
    blocks: Mutex<Vec<Arc<Block<SLOTS>>>>,
    /// Counts of decisions made where no block can be owned (a thread-local
    /// destructor deciding after its thread gave its blocks back).
    spill: Counts<SLOTS>,
}

impl<const SLOTS: usize> ThreadCounts<SLOTS> {
    /// No blocks yet; all zero.
    pub(super) const fn new() -> Self {
        ThreadCounts {
            id: AtomicU64::new(0),
            blocks: Mutex::new(Vec::new()),
            spill: [const { [const { AtomicU64::new(0) }; 3] }; SLOTS],
        }
    }

    /// Adds one to `counts[slot][outcome]` and returns the value before,
    /// as counted by this thread (the caller samples with it). `slot` and
    /// `outcome` must be in range (the caller clamps them).
    #[inline(always)]
    pub(super) fn add(&self, slot: usize, outcome: usize) -> u64 {
        let id = self.id.load(Ordering::Relaxed);
        let (current, ptr) = CURRENT.with(Cell::get);
        if id != 0 && current == id {
            // SAFETY: CURRENT holds a pointer to a `Block<SLOTS>` of the
            // instance whose id it holds (ids are never reused, and only
            // `claim` stores a pointer, of a block of `self`'s type); the
            // thread's OWNED keeps an `Arc` of that block until it clears
            // CURRENT in its destructor.
            let block = unsafe { &*ptr.cast::<Block<SLOTS>>() };
            let cell = &block.counts[slot][outcome];
            // Only this thread writes this block: no read-modify-write needed.
            let prev = cell.load(Ordering::Relaxed);
            cell.store(prev.wrapping_add(1), Ordering::Relaxed);
            return prev;
        }
        self.add_slow(slot, outcome)
    }

    #[cold]
    #[inline(never)]
    fn add_slow(&self, slot: usize, outcome: usize) -> u64 {
        match self.claim() {
            Some(block) => {
                let cell = &block.counts[slot][outcome];
                let prev = cell.load(Ordering::Relaxed);
                cell.store(prev.wrapping_add(1), Ordering::Relaxed);
                prev
            }
            None => self.spill[slot][outcome].fetch_add(1, Ordering::Relaxed),
        }
    }

    /// This instance's id, given on first use.
    fn id(&self) -> u64 {
        let id = self.id.load(Ordering::Relaxed);
        if id != 0 {
            return id;
        }
        let fresh = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        match self
            .id
            .compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => fresh,
            Err(won) => won,
        }
    }

    /// Makes this thread own a block of this instance (one it owns
    /// already, a free one, or a new one) and points CURRENT at it. `None`
    /// while the thread's thread-locals are being destroyed.
    fn claim(&self) -> Option<Arc<Block<SLOTS>>> {
        let id = self.id();
        let mine = OWNED
            .try_with(|owned| {
                owned
                    .0
                    .borrow()
                    .iter()
                    .find(|b| b.owner() == id)
                    .map(|b| b.as_ptr())
            })
            .ok()?;
        let mut blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
        let block = match mine {
            Some(ptr) => blocks
                .iter()
                .find(|b| Arc::as_ptr(b).cast::<()>() == ptr)
                .cloned()?,
            None => {
                let free = blocks.iter().find(|b| {
                    b.in_use
                        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                });
                let block = match free {
                    Some(b) => Arc::clone(b),
                    None => {
                        let b = Arc::new(Block {
                            owner: id,
                            in_use: AtomicBool::new(true),
                            counts: [const { [const { AtomicU64::new(0) }; 3] }; SLOTS],
                        });
                        blocks.push(Arc::clone(&b));
                        b
                    }
                };
                let kept = OWNED.try_with(|owned| {
                    owned
                        .0
                        .borrow_mut()
                        .push(Arc::clone(&block) as Arc<dyn Release>)
                });
                if kept.is_err() {
                    block.release();
                    return None;
                }
                block
            }
        };
        CURRENT.with(|c| c.set((id, Arc::as_ptr(&block).cast())));
        Some(block)
    }

    /// The sum over every block and the spill, cell by cell.
    pub(super) fn sum(&self) -> [[u64; 3]; SLOTS] {
        let mut out = [[0u64; 3]; SLOTS];
        let add = |out: &mut [[u64; 3]; SLOTS], counts: &Counts<SLOTS>| {
            for (o, c) in out.iter_mut().zip(counts) {
                for (o, c) in o.iter_mut().zip(c) {
                    *o = o.wrapping_add(c.load(Ordering::Relaxed));
                }
            }
        };
        add(&mut out, &self.spill);
        for block in self
            .blocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            add(&mut out, &block.counts);
        }
        out
    }

    /// How many blocks exist (one per thread that decided at the same time).
    #[cfg(test)]
    pub(super) fn blocks(&self) -> usize {
        self.blocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_sum_exactly() {
        let c: Arc<ThreadCounts<4>> = Arc::new(ThreadCounts::new());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.add(t % 4, t % 3);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("counting thread");
        }
        let sum = c.sum();
        let total: u64 = sum.iter().flatten().sum();
        assert_eq!(total, 80_000);
        assert_eq!(sum[1][1], 10_000, "thread 1 alone counted into [1][1]");
        assert_eq!(sum[0][0], 10_000, "thread 0 alone counted into [0][0]");
    }

    #[test]
    fn a_thread_that_exits_gives_its_block_to_the_next() {
        let c: Arc<ThreadCounts<2>> = Arc::new(ThreadCounts::new());
        for _ in 0..50 {
            let c2 = Arc::clone(&c);
            std::thread::spawn(move || {
                c2.add(1, 2);
            })
            .join()
            .expect("counting thread");
        }
        assert_eq!(c.blocks(), 1, "one block, reused by 50 threads in turn");
        assert_eq!(c.sum()[1][2], 50, "the counts of exited threads stay");
    }

    #[test]
    fn the_previous_value_is_per_thread_and_instances_are_apart() {
        let a: ThreadCounts<1> = ThreadCounts::new();
        let b: ThreadCounts<1> = ThreadCounts::new();
        assert_eq!(a.add(0, 0), 0);
        assert_eq!(b.add(0, 0), 0);
        assert_eq!(a.add(0, 0), 1);
        assert_eq!(b.add(0, 0), 1);
        assert_eq!(a.add(0, 0), 2);
        assert_eq!(a.sum()[0][0], 3);
        assert_eq!(b.sum()[0][0], 2);
        assert_eq!(
            a.blocks(),
            1,
            "switching instances reuses the thread's block"
        );
    }

    #[test]
    fn a_dropped_instance_never_receives_counts_of_a_new_one() {
        for _ in 0..20 {
            let c: ThreadCounts<1> = ThreadCounts::new();
            c.add(0, 0);
            assert_eq!(c.sum()[0][0], 1);
        }
    }
}
