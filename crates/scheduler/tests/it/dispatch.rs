//! The dispatcher's behaviours, in virtual time (paused tokio clock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use wavecrew_core::TaskId;
use wavecrew_scheduler::{
    BuildOptions, CyclePolicy, Dag, DispatchEvent, DispatchOptions, DispatchReport, Dispatcher,
    FailurePolicy, FinalState, RunOutcome, ScheduleError, TaskNode, TaskRunner, runner_fn,
};

use crate::support::{id, node};

/// Runs each task for its scripted time (default 1 s) with its scripted
/// outcome (default success); tracks the most tasks running at once.
#[derive(Default)]
struct Script {
    plan: HashMap<TaskId, (u64, bool)>,
    running: Mutex<(usize, usize)>,
}

impl Script {
    fn task(mut self, t: &str, secs: u64, ok: bool) -> Self {
        self.plan.insert(id(t), (secs, ok));
        self
    }

    fn peak(&self) -> usize {
        self.running.lock().unwrap().1
    }
}

#[async_trait]
impl TaskRunner for Script {
    async fn run(&self, id: &TaskId) -> RunOutcome {
        let (secs, ok) = self.plan.get(id).copied().unwrap_or((1, true));
        {
            let mut r = self.running.lock().unwrap();
            r.0 += 1;
            r.1 = r.1.max(r.0);
        }
        tokio::time::sleep(Duration::from_secs(secs)).await;
        self.running.lock().unwrap().0 -= 1;
        if ok {
            RunOutcome::Succeeded
        } else {
            RunOutcome::failed(format!("{id} failed"))
        }
    }
}

type Log = Arc<Mutex<Vec<(u64, DispatchEvent)>>>;

/// Dispatch with events logged as (virtual seconds, event).
async fn dispatch(
    dag: &Dag,
    options: DispatchOptions,
    script: Arc<Script>,
) -> (DispatchReport, Vec<(u64, DispatchEvent)>) {
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let t0 = Instant::now();
    let report = Dispatcher::new(dag, options)
        .unwrap()
        .on_event(move |e| {
            sink.lock()
                .unwrap()
                .push((t0.elapsed().as_secs(), e.clone()));
        })
        .run(script)
        .await;
    let events = log.lock().unwrap().clone();
    (report, events)
}

fn build(nodes: Vec<TaskNode>) -> Dag {
    Dag::build(nodes, &BuildOptions::default()).unwrap()
}

fn start_of(report: &DispatchReport, t: &str) -> u64 {
    report.spans[t].start.as_secs()
}

/// A fails after 1 s; B (independent, 3 s) runs meanwhile; C and E need A;
/// D is independent.
fn failing_graph() -> (Dag, Arc<Script>) {
    let dag = build(vec![
        node("T-A", &[]),
        node("T-B", &[]),
        node("T-C", &["T-A"]),
        node("T-D", &[]),
        node("T-E", &["T-C"]),
    ]);
    let script = Script::default().task("T-A", 1, false).task("T-B", 3, true);
    (dag, Arc::new(script))
}

#[tokio::test(start_paused = true)]
async fn stop_lets_running_tasks_finish_and_runs_nothing_new() {
    let (dag, script) = failing_graph();
    let options = DispatchOptions::default()
        .with_max_parallel(Some(2))
        .with_failure_policy(FailurePolicy::Stop);
    let (report, events) = dispatch(&dag, options, script).await;
    assert_eq!(
        report.state("T-A"),
        Some(&FinalState::Failed("T-A failed".into()))
    );
    assert_eq!(report.state("T-B"), Some(&FinalState::Succeeded));
    for t in ["T-C", "T-D", "T-E"] {
        assert_eq!(report.state(t), Some(&FinalState::NotRun), "{t}");
    }
    assert_eq!(report.makespan, Duration::from_secs(3));
    assert!(!report.all_succeeded());
    let not_run: Vec<_> = events
        .iter()
        .filter(|(_, e)| matches!(e, DispatchEvent::NotRun(_)))
        .collect();
    assert_eq!(not_run.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn continue_skips_dependents_and_runs_the_rest() {
    let (dag, script) = failing_graph();
    let options = DispatchOptions::default()
        .with_max_parallel(Some(2))
        .with_failure_policy(FailurePolicy::Continue);
    let (report, events) = dispatch(&dag, options, script).await;
    assert_eq!(report.state("T-C"), Some(&FinalState::Skipped(id("T-A"))));
    assert_eq!(report.state("T-E"), Some(&FinalState::Skipped(id("T-A"))));
    assert_eq!(report.state("T-D"), Some(&FinalState::Succeeded));
    assert_eq!(report.count("skipped"), 2);
    // Skipped events follow the failure, in id order.
    let pos = |f: &dyn Fn(&DispatchEvent) -> bool| events.iter().position(|(_, e)| f(e)).unwrap();
    let failed = pos(
        &|e| matches!(e, DispatchEvent::Finished(t, RunOutcome::Failed(_)) if t.as_str() == "T-A"),
    );
    assert_eq!(
        events[failed + 1].1,
        DispatchEvent::Skipped(id("T-C"), id("T-A"))
    );
    assert_eq!(
        events[failed + 2].1,
        DispatchEvent::Skipped(id("T-E"), id("T-A"))
    );
}

#[tokio::test(start_paused = true)]
async fn always_runs_dependents_anyway() {
    let (dag, script) = failing_graph();
    let options = DispatchOptions::default()
        .with_max_parallel(Some(2))
        .with_failure_policy(FailurePolicy::Always);
    let (report, _) = dispatch(&dag, options, script).await;
    assert_eq!(report.count("succeeded"), 4);
    assert_eq!(report.count("failed"), 1);
    assert!(start_of(&report, "T-C") >= 1);
}

#[tokio::test(start_paused = true)]
async fn barrier_reproduces_the_wave_order() {
    // A (1 s) → B; C takes 10 s. Dependency-driven, B starts at 1 s;
    // with the barrier it waits for wave 0 (A and C) to end at 10 s.
    let dag = build(vec![
        node("W-A", &[]),
        node("W-B", &["W-A"]),
        node("W-C", &[]),
        node("W-D", &["W-B"]),
    ]);
    let script = || Arc::new(Script::default().task("W-C", 10, true));
    let (free, _) = dispatch(&dag, DispatchOptions::default(), script()).await;
    assert_eq!(start_of(&free, "W-B"), 1);
    assert_eq!(free.makespan, Duration::from_secs(10));

    let (barrier, events) = dispatch(
        &dag,
        DispatchOptions::default().with_barrier(true),
        script(),
    )
    .await;
    assert_eq!(start_of(&barrier, "W-B"), 10);
    assert_eq!(start_of(&barrier, "W-D"), 11);
    assert_eq!(barrier.makespan, Duration::from_secs(12));
    let waves = dag.waves().waves;
    let mut seen = 0;
    for (k, wave) in waves.iter().enumerate() {
        let mut started: Vec<TaskId> = barrier.start_order[seen..seen + wave.len()].to_vec();
        started.sort();
        assert_eq!(&started, wave, "wave {k}");
        seen += wave.len();
    }
    let starts: Vec<usize> = events
        .iter()
        .filter_map(|(_, e)| {
            if let DispatchEvent::WaveStarted(k) = e {
                Some(*k)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(starts, [0, 1, 2]);
}

#[tokio::test(start_paused = true)]
async fn cancellation_records_running_tasks_and_starts_nothing_new() {
    let dag = build((0..6).map(|i| node(&format!("K-{i}"), &[])).collect());
    let script = Arc::new(Script::default().task("K-0", 2, true).task("K-1", 5, true));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let _ = tx.send(());
    });
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let report = Dispatcher::new(&dag, DispatchOptions::default().with_max_parallel(Some(2)))
        .unwrap()
        .on_event(move |e| sink.lock().unwrap().push((0, e.clone())))
        .run_until(script, async move {
            let _ = rx.await;
        })
        .await;
    assert!(report.cancelled);
    assert_eq!(
        report.makespan,
        Duration::from_secs(5),
        "waits for the running task"
    );
    assert_eq!(report.state("K-0"), Some(&FinalState::Succeeded));
    assert_eq!(report.state("K-1"), Some(&FinalState::Succeeded));
    assert_eq!(report.count("not_run"), 4);
    // Every start has its finish: nothing is half-recorded.
    let events = log.lock().unwrap();
    let started = events
        .iter()
        .filter(|(_, e)| matches!(e, DispatchEvent::Started(_)))
        .count();
    let finished = events
        .iter()
        .filter(|(_, e)| matches!(e, DispatchEvent::Finished(..)))
        .count();
    assert_eq!((started, finished), (2, 2));
}

#[tokio::test(start_paused = true)]
async fn weights_take_slots_and_heavy_tasks_run_alone() {
    let dag = build(vec![
        node("H-1", &[]).with_weight(3),
        node("H-2", &[]),
        node("H-3", &[]),
        node("H-4", &[]).with_weight(10),
    ]);
    let script = Arc::new(Script::default());
    let (report, events) = dispatch(
        &dag,
        DispatchOptions::default().with_max_parallel(Some(4)),
        Arc::clone(&script),
    )
    .await;
    assert!(report.all_succeeded());
    // weight(H-1)=3 + 1 fit; H-4 (10 → capped at 4) runs alone.
    let h4 = report.spans["H-4"];
    for (t, span) in &report.spans {
        if t.as_str() != "H-4" {
            assert!(
                span.end <= h4.start || span.start >= h4.end,
                "{t} overlaps H-4"
            );
        }
    }
    let mut load = 0i64;
    for (_, e) in &events {
        match e {
            DispatchEvent::Started(t) => {
                load += i64::from(dag.get(t.as_str()).unwrap().weight.min(4));
            }
            DispatchEvent::Finished(t, _) => {
                load -= i64::from(dag.get(t.as_str()).unwrap().weight.min(4));
            }
            _ => {}
        }
        assert!(load <= 4);
    }
    assert_eq!(report.makespan, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn overlapping_files_never_run_together() {
    let dag = build(vec![
        node("F-1", &[]).with_files(["src/auth.rs"]),
        node("F-2", &[]).with_files(["./src/"]),
        node("F-3", &[]).with_files(["docs/a.md"]),
        node("F-4", &[]).with_files(["src/auth.rs", "README.md"]),
    ]);
    let script = Arc::new(Script::default());
    let (report, _) = dispatch(&dag, DispatchOptions::default(), Arc::clone(&script)).await;
    assert!(report.all_succeeded());
    // F-1, F-2 and F-4 overlap pairwise: three seconds in a row; F-3 alongside.
    assert_eq!(report.makespan, Duration::from_secs(3));
    assert_eq!(script.peak(), 2);
}

#[tokio::test(start_paused = true)]
async fn class_limits_hold() {
    let dag = build(
        (0..6)
            .map(|i| {
                node(&format!("C-{i}"), &[]).with_class(if i < 4 { "codex" } else { "gemini" })
            })
            .collect(),
    );
    let script = Arc::new(Script::default());
    let options = DispatchOptions::default().with_class_limit("codex", 1);
    let (report, _) = dispatch(&dag, options, Arc::clone(&script)).await;
    assert_eq!(report.makespan, Duration::from_secs(4));
    assert_eq!(script.peak(), 3);
}

#[tokio::test(start_paused = true)]
async fn most_critical_ready_task_starts_first() {
    // One slot: Z-1 leads a long chain, so it starts before A-1 despite its id.
    let dag = build(vec![
        node("A-1", &[]),
        node("Z-1", &[]).with_estimate(1.0),
        node("Z-2", &["Z-1"]).with_estimate(5.0),
    ]);
    let (report, _) = dispatch(
        &dag,
        DispatchOptions::default().with_max_parallel(Some(1)),
        Arc::new(Script::default()),
    )
    .await;
    assert_eq!(report.start_order, [id("Z-1"), id("Z-2"), id("A-1")]);
}

#[tokio::test(start_paused = true)]
async fn forced_cycle_runs_in_seed_004_order() {
    let opts = BuildOptions::default().with_cycle_policy(CyclePolicy::Force);
    let dag = Dag::build(
        vec![
            node("E-2", &["E-3"]),
            node("E-3", &["E-2"]),
            node("E-1", &[]),
        ],
        &opts,
    )
    .unwrap();
    let (report, events) = dispatch(
        &dag,
        DispatchOptions::default().with_max_parallel(Some(1)),
        Arc::new(Script::default()),
    )
    .await;
    assert!(report.all_succeeded());
    assert_eq!(report.forced, [id("E-2")]);
    assert_eq!(report.start_order, [id("E-1"), id("E-2"), id("E-3")]);
    assert!(
        events
            .iter()
            .any(|(_, e)| *e == DispatchEvent::Forced(id("E-2")))
    );
    let (barrier, _) = dispatch(
        &dag,
        DispatchOptions::default().with_barrier(true),
        Arc::new(Script::default()),
    )
    .await;
    assert_eq!(barrier.start_order, [id("E-1"), id("E-2"), id("E-3")]);
    assert_eq!(barrier.forced, [id("E-2")]);
}

#[tokio::test(start_paused = true)]
async fn done_tasks_are_not_run_and_panics_are_failures() {
    let dag = build(vec![
        node("D-1", &[]).with_done(true),
        node("D-2", &["D-1"]),
        node("D-3", &[]),
    ]);
    let runner = Arc::new(runner_fn(|id: TaskId| async move {
        assert_ne!(id.as_str(), "D-3", "boom");
        RunOutcome::Succeeded
    }));
    let report = Dispatcher::new(
        &dag,
        DispatchOptions::default().with_failure_policy(FailurePolicy::Continue),
    )
    .unwrap()
    .run(runner)
    .await;
    assert_eq!(report.states.len(), 2);
    assert_eq!(report.state("D-2"), Some(&FinalState::Succeeded));
    assert!(matches!(report.state("D-3"), Some(FinalState::Failed(m)) if m.contains("panic")));
}

#[test]
fn zero_limits_are_refused_with_the_ids() {
    let dag = build(vec![node("Z-1", &[]).with_class("codex"), node("Z-2", &[])]);
    let err = Dispatcher::new(
        &dag,
        DispatchOptions::default().with_class_limit("codex", 0),
    )
    .unwrap_err();
    assert_eq!(
        err,
        ScheduleError::ZeroLimit {
            class: Some("codex".into()),
            ids: vec![id("Z-1")]
        }
    );
    let err =
        Dispatcher::new(&dag, DispatchOptions::default().with_max_parallel(Some(0))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the global limit (max_parallel) is 0, so `Z-1`, `Z-2` could never run"
    );
    // A zero limit for a class nobody uses is fine.
    assert!(
        Dispatcher::new(
            &dag,
            DispatchOptions::default().with_class_limit("gemini", 0)
        )
        .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn empty_graph_finishes_at_once() {
    let dag = build(vec![]);
    let (report, events) = dispatch(
        &dag,
        DispatchOptions::default(),
        Arc::new(Script::default()),
    )
    .await;
    assert!(report.all_succeeded());
    assert!(events.is_empty());
    assert_eq!(report.makespan, Duration::ZERO);
}

/// Parks T-A (its review waits 5 s) and asks for T-R to run again once.
#[derive(Default)]
struct Reviewing {
    runs: Mutex<HashMap<String, usize>>,
}

#[async_trait]
impl TaskRunner for Reviewing {
    async fn run(&self, id: &TaskId) -> RunOutcome {
        let n = {
            let mut runs = self.runs.lock().unwrap();
            let n = runs.entry(id.as_str().to_owned()).or_default();
            *n += 1;
            *n
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        match (id.as_str(), n) {
            ("T-A", _) => RunOutcome::Parked,
            ("T-R", 1) => RunOutcome::Again,
            _ => RunOutcome::Succeeded,
        }
    }

    async fn resume(&self, id: &TaskId) -> RunOutcome {
        assert_eq!(id.as_str(), "T-A");
        tokio::time::sleep(Duration::from_secs(5)).await;
        RunOutcome::Succeeded
    }
}

#[tokio::test(start_paused = true)]
async fn a_parked_task_frees_its_slot_and_its_dependents_wait_for_its_end() {
    let dag = build(vec![
        node("T-A", &[]),
        node("T-B", &[]),
        node("T-C", &["T-A"]),
        node("T-R", &[]),
    ]);
    let runner = Arc::new(Reviewing::default());
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let t0 = Instant::now();
    let report = Dispatcher::new(&dag, DispatchOptions::default().with_max_parallel(Some(1)))
        .unwrap()
        .on_event(move |e| {
            sink.lock()
                .unwrap()
                .push((t0.elapsed().as_secs(), e.clone()));
        })
        .run(Arc::clone(&runner))
        .await;
    let events = log.lock().unwrap().clone();
    // One slot: A runs 0–1 s and parks; B and R use the slot meanwhile
    // (R twice: it asked to run again); C starts only after A's end (6 s).
    assert!(
        events.contains(&(1, DispatchEvent::Parked(id("T-A")))),
        "{events:?}"
    );
    assert_eq!(start_of(&report, "T-C"), 6, "{events:?}");
    assert!(start_of(&report, "T-B") < 6, "{events:?}");
    assert_eq!(runner.runs.lock().unwrap()["T-R"], 2);
    for t in ["T-A", "T-B", "T-C", "T-R"] {
        assert_eq!(report.state(t), Some(&FinalState::Succeeded), "{t}");
    }
    assert!(
        events
            .iter()
            .any(|(_, e)| *e == DispatchEvent::Finished(id("T-R"), RunOutcome::Again)),
        "{events:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_parked_task_is_not_awaited_after_shutdown() {
    let dag = build(vec![node("T-A", &[]), node("T-C", &["T-A"])]);
    let runner = Arc::new(Reviewing::default());
    let report = Dispatcher::new(&dag, DispatchOptions::default())
        .unwrap()
        .run_until(runner, tokio::time::sleep(Duration::from_secs(2)))
        .await;
    assert!(report.cancelled);
    assert_eq!(report.state("T-A"), Some(&FinalState::NotRun));
    assert_eq!(report.state("T-C"), Some(&FinalState::NotRun));
}
