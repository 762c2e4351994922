//! Dispatcher invariants on random DAGs with random durations, weights,
//! classes and files, in virtual time.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use proptest::prelude::*;
use wavecrew_core::TaskId;
use wavecrew_scheduler::{
    BuildOptions, Dag, DispatchEvent, DispatchOptions, Dispatcher, RunOutcome, TaskRunner,
};

use crate::support::{RandomDag, random_dag, tid};

const FILES: [&str; 5] = ["src", "src/a.rs", "src/b.rs", "docs/x.md", "lib.rs"];
const CLASSES: [Option<&str>; 3] = [None, Some("a"), Some("b")];

/// Whether two declared paths overlap: equal, or one inside the other.
fn overlap(x: &str, y: &str) -> bool {
    x == y || x.starts_with(&format!("{y}/")) || y.starts_with(&format!("{x}/"))
}

#[derive(Debug, Clone)]
struct Extras {
    millis: Vec<u64>,
    weight: Vec<u32>,
    class: Vec<usize>,
    files: Vec<Vec<usize>>,
}

fn extras(n: usize) -> impl Strategy<Value = Extras> {
    (
        prop::collection::vec(1u64..50, n),
        prop::collection::vec(1u32..4, n),
        prop::collection::vec(0usize..3, n),
        prop::collection::vec(prop::collection::vec(0usize..5, 0..2), n),
    )
        .prop_map(|(millis, weight, class, files)| Extras {
            millis,
            weight,
            class,
            files,
        })
}

/// Checks every constraint at the moment the runner is entered: the
/// dependencies have finished and no limit is exceeded (a conservative view:
/// a task counts as running from entry to the end of its sleep).
struct Checker {
    dag: Dag,
    millis: HashMap<TaskId, u64>,
    limit: Option<u32>,
    class_limits: HashMap<String, usize>,
    state: Mutex<(HashSet<TaskId>, HashSet<TaskId>)>,
    violations: Mutex<Vec<String>>,
}

impl Checker {
    fn check_start(&self, id: &TaskId) {
        let mut st = self.state.lock().unwrap();
        let (running, finished) = &mut *st;
        let mut v = Vec::new();
        for d in self.dag.dependencies(id.as_str()) {
            if !finished.contains(d) {
                v.push(format!("{id} started before its dependency {d} finished"));
            }
        }
        let me = self.dag.get(id.as_str()).unwrap();
        let weight = |t: &TaskId| {
            let w = self.dag.get(t.as_str()).unwrap().weight.max(1);
            self.limit.map_or(w, |l| w.min(l))
        };
        if let Some(l) = self.limit {
            let load: u32 = running.iter().map(weight).sum::<u32>() + weight(id);
            if load > l {
                v.push(format!("{id} started with load {load} > {l}"));
            }
        }
        if let Some(c) = &me.class
            && let Some(&cap) = self.class_limits.get(c)
        {
            let count = running
                .iter()
                .filter(|t| self.dag.get(t.as_str()).unwrap().class.as_ref() == Some(c))
                .count();
            if count + 1 > cap {
                v.push(format!("{id} exceeded class {c}"));
            }
        }
        for other in running.iter() {
            let theirs = &self.dag.get(other.as_str()).unwrap().files;
            if me
                .files
                .iter()
                .any(|f| theirs.iter().any(|g| overlap(f, g)))
            {
                v.push(format!("{id} runs with {other} on overlapping files"));
            }
        }
        running.insert(id.clone());
        self.violations.lock().unwrap().extend(v);
    }
}

#[async_trait]
impl TaskRunner for Checker {
    async fn run(&self, id: &TaskId) -> RunOutcome {
        self.check_start(id);
        tokio::time::sleep(Duration::from_millis(self.millis[id])).await;
        let mut st = self.state.lock().unwrap();
        st.0.remove(id);
        st.1.insert(id.clone());
        RunOutcome::Succeeded
    }
}

fn run_case(
    g: &RandomDag,
    x: &Extras,
    limit: Option<u32>,
    barrier: bool,
) -> Result<(), TestCaseError> {
    let nodes: Vec<_> = g
        .nodes()
        .into_iter()
        .map(|n| {
            let i = usize::try_from(n.id.number().unwrap()).unwrap();
            let mut n = n
                .with_weight(x.weight[i])
                .with_files(x.files[i].iter().map(|&f| FILES[f]));
            if let Some(c) = CLASSES[x.class[i]] {
                n = n.with_class(c);
            }
            n
        })
        .collect();
    let dag = Dag::build(nodes, &BuildOptions::default()).unwrap();
    let class_limits: HashMap<String, usize> = [("a".to_owned(), 1), ("b".to_owned(), 2)].into();
    let millis = (0..g.deps.len()).map(|i| (tid(i), x.millis[i])).collect();
    let checker = Arc::new(Checker {
        dag: dag.clone(),
        millis,
        limit,
        class_limits: class_limits.clone(),
        state: Mutex::default(),
        violations: Mutex::default(),
    });
    let options = DispatchOptions {
        max_parallel: limit.map(|l| l as usize),
        class_limits,
        failure_policy: wavecrew_scheduler::FailurePolicy::Stop,
        barrier,
    };
    let events: Arc<Mutex<Vec<DispatchEvent>>> = Arc::default();
    let sink = Arc::clone(&events);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let report = rt.block_on(
        Dispatcher::new(&dag, options)
            .unwrap()
            .on_event(move |e| sink.lock().unwrap().push(e.clone()))
            .run(Arc::clone(&checker)),
    );
    let violations = checker.violations.lock().unwrap();
    prop_assert!(violations.is_empty(), "{:?}", *violations);
    prop_assert!(report.all_succeeded());
    prop_assert_eq!(report.states.len(), dag.pending_len());

    // The dispatcher's own view, from its events: deps finished before a
    // start; every start finished once.
    let mut finished = HashSet::new();
    let mut started = HashSet::new();
    for e in events.lock().unwrap().iter() {
        match e {
            DispatchEvent::Started(t) => {
                for d in dag.dependencies(t.as_str()) {
                    prop_assert!(finished.contains(d), "{} started before {}", t, d);
                }
                prop_assert!(started.insert(t.clone()));
            }
            DispatchEvent::Finished(t, _) => prop_assert!(finished.insert(t.clone())),
            _ => {}
        }
    }
    prop_assert_eq!(&started, &finished);
    if barrier {
        let waves = dag.waves().waves;
        for k in 1..waves.len() {
            let opened = waves[k]
                .iter()
                .map(|t| report.spans[t].start)
                .min()
                .unwrap();
            let closed = waves[k - 1]
                .iter()
                .map(|t| report.spans[t].end)
                .max()
                .unwrap();
            prop_assert!(
                opened >= closed,
                "wave {} opened before wave {} closed",
                k,
                k - 1
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn dispatcher_respects_dependencies_and_limits(
        (g, x) in random_dag(40).prop_flat_map(|g| { let n = g.deps.len(); (Just(g), extras(n)) }),
        limit in prop::option::of(1u32..5),
        barrier in any::<bool>(),
    ) {
        run_case(&g, &x, limit, barrier)?;
    }
}
