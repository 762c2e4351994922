//! The dispatch loop and the state it owns.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::{AbortHandle, Id, JoinError, JoinSet};
use tokio::time::Instant;
use wavecrew_core::TaskId;

use super::gate::Gate;
use super::report::{DispatchEvent, DispatchReport, FinalState, TaskSpan};
use super::runner::{RunOutcome, TaskRunner};
use super::{Callback, DispatchOptions, FailurePolicy};
use crate::dag::{CyclePolicy, Dag};
use crate::waves::UNASSIGNED;

#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// Completed before the dispatch: not ours.
    Done,
    Waiting,
    Ready,
    Running,
    Ended(FinalState),
}

/// A ready task's place in the queue: longest remaining path first, then
/// the smaller id.
#[derive(Debug, Clone, Copy)]
struct Priority {
    remaining: f64,
    rank: Reverse<u32>,
    index: usize,
}

impl Ord for Priority {
    fn cmp(&self, other: &Self) -> Ordering {
        self.remaining
            .total_cmp(&other.remaining)
            .then(self.rank.cmp(&other.rank))
    }
}

impl PartialOrd for Priority {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Priority {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Priority {}

pub(super) struct Engine<'d> {
    dag: &'d Dag,
    policy: FailurePolicy,
    barrier: bool,
    gate: Gate,
    on_event: Option<Callback<'d>>,
    slot: Vec<Slot>,
    unmet: Vec<usize>,
    remaining: Vec<f64>,
    ready: BinaryHeap<Priority>,
    /// Barrier mode: the current wave, how many waves were opened, and the
    /// unended count per wave.
    wave: usize,
    opened: usize,
    open_in_wave: Vec<usize>,
    /// Force policy: pending tasks, lowest-numbered first, and a cursor.
    force_order: Vec<usize>,
    force_cursor: usize,
    stopping: bool,
    running: HashMap<Id, usize>,
    /// Parked tasks, whose end [`TaskRunner::resume`] awaits without a slot.
    parked: HashMap<Id, (usize, AbortHandle)>,
    t0: Instant,
    report: DispatchReport,
}

impl<'d> Engine<'d> {
    pub(super) fn new(
        dag: &'d Dag,
        options: &DispatchOptions,
        gate: Gate,
        on_event: Option<Callback<'d>>,
    ) -> Self {
        let n = dag.len();
        let levels = dag.levels();
        let slot: Vec<Slot> = (0..n)
            .map(|i| {
                if dag.is_done(i) {
                    Slot::Done
                } else {
                    Slot::Waiting
                }
            })
            .collect();
        let mut open_in_wave = vec![0; levels.count()];
        for &l in &levels.level {
            if l != UNASSIGNED {
                open_in_wave[l as usize] += 1;
            }
        }
        let mut force_order = Vec::new();
        if dag.cycle_policy() == CyclePolicy::Force && !options.barrier {
            force_order = dag.number_order().into_iter().map(|i| i as usize).collect();
        }
        Self {
            dag,
            policy: options.failure_policy,
            barrier: options.barrier,
            gate,
            on_event,
            unmet: (0..n).map(|i| dag.in_degree(i)).collect(),
            remaining: dag.remaining_by_index(),
            slot,
            ready: BinaryHeap::new(),
            wave: 0,
            opened: 0,
            open_in_wave,
            force_order,
            force_cursor: 0,
            stopping: false,
            running: HashMap::new(),
            parked: HashMap::new(),
            t0: Instant::now(),
            report: DispatchReport {
                states: BTreeMap::new(),
                start_order: Vec::new(),
                spans: BTreeMap::new(),
                makespan: Duration::ZERO,
                forced: Vec::new(),
                cancelled: false,
            },
        }
    }

    pub(super) async fn run<R, S>(mut self, runner: Arc<R>, shutdown: S) -> DispatchReport
    where
        R: TaskRunner + ?Sized + 'static,
        S: Future + Send,
    {
        let mut shutdown = pin!(shutdown);
        let mut tasks: JoinSet<RunOutcome> = JoinSet::new();
        self.t0 = Instant::now();
        if self.barrier {
            self.open_waves();
        } else {
            for i in 0..self.slot.len() {
                if self.slot[i] == Slot::Waiting && self.unmet[i] == 0 {
                    self.make_ready(i);
                }
            }
        }
        loop {
            self.start_ready(&runner, &mut tasks);
            if tasks.is_empty() {
                if !self.stopping && self.force_release() {
                    continue;
                }
                break;
            }
            tokio::select! {
                biased;
                _ = &mut shutdown, if !self.report.cancelled => {
                    self.report.cancelled = true;
                    self.stopping = true;
                    // A parked task waits for a person, who may never come:
                    // stop waiting; it stays as the store says (not run here).
                    for (_, handle) in self.parked.values() {
                        handle.abort();
                    }
                }
                Some(joined) = tasks.join_next_with_id() => self.on_joined(joined, &runner, &mut tasks),
            }
        }
        self.finish()
    }

    fn emit(&mut self, event: &DispatchEvent) {
        if let Some(f) = self.on_event.as_mut() {
            f(event);
        }
    }

    fn id(&self, i: usize) -> TaskId {
        self.dag.node_at(i).id.clone()
    }

    fn make_ready(&mut self, i: usize) {
        self.slot[i] = Slot::Ready;
        self.ready.push(Priority {
            remaining: self.remaining[i],
            rank: Reverse(self.dag.rank()[i]),
            index: i,
        });
    }

    /// Start every ready task the gate admits, most critical first.
    fn start_ready<R: TaskRunner + ?Sized + 'static>(
        &mut self,
        runner: &Arc<R>,
        tasks: &mut JoinSet<RunOutcome>,
    ) {
        if self.stopping {
            return;
        }
        let mut deferred = Vec::new();
        while let Some(p) = self.ready.pop() {
            if self.slot[p.index] != Slot::Ready {
                continue;
            }
            if self.gate.full() {
                deferred.push(p);
                break;
            }
            if !self.gate.fits(p.index) {
                deferred.push(p);
                continue;
            }
            let i = p.index;
            self.gate.acquire(i);
            self.slot[i] = Slot::Running;
            let id = self.id(i);
            self.report.start_order.push(id.clone());
            let at = self.t0.elapsed();
            self.report
                .spans
                .insert(id.clone(), TaskSpan { start: at, end: at });
            self.emit(&DispatchEvent::Started(id.clone()));
            let runner = Arc::clone(runner);
            let handle = tasks.spawn(async move { runner.run(&id).await });
            self.running.insert(handle.id(), i);
        }
        self.ready.extend(deferred);
    }

    fn on_joined<R: TaskRunner + ?Sized + 'static>(
        &mut self,
        joined: Result<(Id, RunOutcome), JoinError>,
        runner: &Arc<R>,
        tasks: &mut JoinSet<RunOutcome>,
    ) {
        let (task, outcome) = match joined {
            Ok((task, outcome)) => (task, outcome),
            Err(e) if e.is_cancelled() && self.parked.contains_key(&e.id()) => {
                // A parked task no longer awaited (shutdown): not run here.
                self.parked.remove(&e.id());
                return;
            }
            Err(e) => (
                e.id(),
                RunOutcome::failed(format!("the task runner did not finish: {e}")),
            ),
        };
        let i = if let Some(i) = self.running.remove(&task) {
            self.gate.release(i);
            i
        } else if let Some((i, _)) = self.parked.remove(&task) {
            i
        } else {
            return;
        };
        let id = self.id(i);
        match outcome {
            RunOutcome::Parked => {
                self.emit(&DispatchEvent::Parked(id.clone()));
                let runner = Arc::clone(runner);
                let handle = tasks.spawn(async move { runner.resume(&id).await });
                let abort = handle.clone();
                self.parked.insert(handle.id(), (i, abort));
                return;
            }
            RunOutcome::Again => {
                self.emit(&DispatchEvent::Finished(id, RunOutcome::Again));
                if self.stopping {
                    // Nothing new starts: it is not run again here.
                    self.slot[i] = Slot::Waiting;
                } else {
                    self.make_ready(i);
                }
                return;
            }
            RunOutcome::Succeeded | RunOutcome::Failed(_) => {}
        }
        if let Some(span) = self.report.spans.get_mut(&id) {
            span.end = self.t0.elapsed();
        }
        let failed = !outcome.is_success();
        self.slot[i] = Slot::Ended(match &outcome {
            RunOutcome::Failed(m) => FinalState::Failed(m.clone()),
            _ => FinalState::Succeeded,
        });
        self.emit(&DispatchEvent::Finished(id, outcome));
        self.close(i);
        match (failed, self.policy) {
            (true, FailurePolicy::Stop) => self.stopping = true,
            (true, FailurePolicy::Continue) => self.skip_dependents(i),
            _ => self.release_dependents(i),
        }
        if self.barrier {
            self.open_waves();
        }
    }

    /// Dependents of `i` lose one unmet dependency; those left with none
    /// become ready (in barrier mode, waves decide instead).
    fn release_dependents(&mut self, i: usize) {
        let dag = self.dag;
        for j in dag.successors(i) {
            self.unmet[j] = self.unmet[j].saturating_sub(1);
            if self.unmet[j] == 0 && self.slot[j] == Slot::Waiting && !self.barrier {
                self.make_ready(j);
            }
        }
    }

    /// Mark every waiting task downstream of the failed `i` as skipped.
    fn skip_dependents(&mut self, i: usize) {
        let dag = self.dag;
        let mut stack: Vec<usize> = dag.successors(i).collect();
        let mut skipped = Vec::new();
        while let Some(j) = stack.pop() {
            if matches!(self.slot[j], Slot::Waiting | Slot::Ready) {
                self.slot[j] = Slot::Ended(FinalState::Skipped(self.id(i)));
                skipped.push(j);
                stack.extend(dag.successors(j));
            }
        }
        skipped.sort_unstable_by_key(|&j| dag.rank()[j]);
        let cause = self.id(i);
        for j in skipped {
            self.close(j);
            self.emit(&DispatchEvent::Skipped(self.id(j), cause.clone()));
        }
    }

    /// Task `i` reached its final state: count it off its wave.
    fn close(&mut self, i: usize) {
        let level = self.dag.levels().level[i];
        if level != UNASSIGNED {
            self.open_in_wave[level as usize] -= 1;
        }
    }

    /// Barrier mode: open the current wave if it is not yet, and move on
    /// to the next while the current one has ended entirely.
    fn open_waves(&mut self) {
        let dag = self.dag;
        let levels = dag.levels();
        while self.wave < levels.count() {
            if self.opened <= self.wave {
                if self.stopping {
                    return;
                }
                self.emit(&DispatchEvent::WaveStarted(self.wave));
                for &i in levels.wave(self.wave) {
                    if self.slot[i as usize] == Slot::Waiting {
                        // A wave the force policy made: say so, as the
                        // dependency-driven mode does.
                        if levels.forced.contains(&i) {
                            let id = self.id(i as usize);
                            self.report.forced.push(id.clone());
                            self.emit(&DispatchEvent::Forced(id));
                        }
                        self.make_ready(i as usize);
                    }
                }
                self.opened = self.wave + 1;
            }
            if self.open_in_wave[self.wave] != 0 {
                return;
            }
            self.wave += 1;
        }
    }

    /// Force policy: nothing runs and nothing is ready, yet tasks wait on a
    /// cycle. Release the lowest-numbered one.
    fn force_release(&mut self) -> bool {
        while let Some(&i) = self.force_order.get(self.force_cursor) {
            if self.slot[i] == Slot::Waiting {
                let id = self.id(i);
                tracing::warn!(task = %id, "no task is ready: releasing the lowest-numbered waiting task");
                self.report.forced.push(id.clone());
                self.emit(&DispatchEvent::Forced(id));
                self.make_ready(i);
                return true;
            }
            self.force_cursor += 1;
        }
        false
    }

    /// Record everything not ended as not run, and build the report.
    fn finish(mut self) -> DispatchReport {
        self.report.makespan = self.t0.elapsed();
        let order: Vec<u32> = self.dag.order().to_vec();
        for i in order {
            let i = i as usize;
            let state = match std::mem::replace(&mut self.slot[i], Slot::Done) {
                Slot::Done => continue,
                Slot::Ended(state) => state,
                Slot::Waiting | Slot::Ready | Slot::Running => {
                    self.emit(&DispatchEvent::NotRun(self.id(i)));
                    FinalState::NotRun
                }
            };
            self.report.states.insert(self.id(i), state);
        }
        self.report
    }
}
