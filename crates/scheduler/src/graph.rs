//! The graph storage: [`Adjacency`], neighbour lists as compressed sparse
//! rows built by counting sorts, and [`CsrGraph`], the petgraph view that
//! cycle analysis runs Tarjan's SCC on. Imports nothing of the crate.

use petgraph::Directed;
use petgraph::csr::Csr;

/// The compressed-sparse-row view used for Tarjan's SCC.
pub(crate) type CsrGraph = Csr<(), (), Directed, u32>;

/// Compressed sparse rows: the neighbours of `i` are
/// `targets[start[i]..start[i + 1]]`, ascending. Offsets are `u32` (half
/// the memory traffic of `usize`); more than 4 billion edges cannot be
/// held in memory anyway.
#[derive(Debug, Clone, Default)]
pub(crate) struct Adjacency {
    start: Vec<u32>,
    pub(crate) targets: Vec<u32>,
}

impl Adjacency {
    /// From edges sorted by source, then target.
    pub(crate) fn from_sorted(n: usize, edges: &[(u32, u32)]) -> Self {
        let mut start = vec![0u32; n + 1];
        for &(a, _) in edges {
            start[a as usize + 1] += 1;
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        Self {
            start,
            targets: edges.iter().map(|&(_, b)| b).collect(),
        }
    }

    /// The reversed graph (a stable counting sort keeps targets ascending).
    pub(crate) fn transpose(&self) -> Self {
        let n = self.len();
        let mut start = vec![0u32; n + 1];
        for &b in &self.targets {
            start[b as usize + 1] += 1;
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut targets = vec![0u32; self.targets.len()];
        for a in 0..n {
            for &b in self.of(a) {
                let slot = &mut fill[b as usize];
                #[allow(clippy::cast_possible_truncation)] // node indices are u32
                {
                    targets[*slot as usize] = a as u32;
                }
                *slot += 1;
            }
        }
        Self { start, targets }
    }

    pub(crate) fn of(&self, i: usize) -> &[u32] {
        &self.targets[self.start[i] as usize..self.start[i + 1] as usize]
    }

    pub(crate) fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub(crate) fn to_csr(&self) -> CsrGraph {
        let mut edges = Vec::with_capacity(self.targets.len());
        for a in 0..self.len() {
            #[allow(clippy::cast_possible_truncation)] // node indices are u32
            edges.extend(self.of(a).iter().map(|&b| (a as u32, b)));
        }
        // Rows are ascending and unique by construction.
        let mut g = CsrGraph::from_sorted_edges(&edges).unwrap_or_default();
        while g.node_count() < self.len() {
            g.add_node(());
        }
        g
    }
}
