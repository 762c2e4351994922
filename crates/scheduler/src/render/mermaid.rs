//! Mermaid `flowchart TD` output.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{CRITICAL_COLOUR, Layout, StateMap, state_colour};
use crate::dag::Dag;

impl Dag {
    /// The graph as a Mermaid flowchart: one subgraph per wave, critical
    /// edges thick and red (`==>` plus `linkStyle`), states as classes.
    /// Node names are `t<n>` (by id order) and labels the task ids, so any
    /// id is safe in Mermaid's syntax.
    pub fn to_mermaid(&self, states: Option<&StateMap<'_>>) -> String {
        let layout = Layout::new(self);
        let name = |i: usize| format!("t{}", self.rank()[i]);
        let mut out = String::from("flowchart TD\n");
        let mut classes: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        let mut node = |out: &mut String, i: usize, indent: &str| {
            let label = if self.node_at(i).done {
                format!("{} (done)", layout.id(i))
            } else {
                layout.id(i).to_string()
            };
            let _ = writeln!(out, "{indent}{}[\"{label}\"]", name(i));
            if let Some(state) = layout
                .state(states, i)
                .filter(|s| state_colour(s).is_some())
            {
                classes.entry(state).or_default().push(self.rank()[i]);
            }
        };
        for (k, wave) in layout.waves.iter().enumerate() {
            let _ = writeln!(out, "    subgraph wave_{} [\"wave {}\"]", k + 1, k + 1);
            for &i in wave {
                node(&mut out, i, "        ");
            }
            out.push_str("    end\n");
        }
        for &i in &layout.done {
            node(&mut out, i, "    ");
        }
        let mut critical_links = Vec::new();
        for (n, &(a, b)) in layout.edges.iter().enumerate() {
            let arrow = if layout.critical_edges.contains(&(a, b)) {
                critical_links.push(n.to_string());
                "==>"
            } else {
                "-->"
            };
            let _ = writeln!(out, "    {} {arrow} {}", name(a), name(b));
        }
        if !critical_links.is_empty() {
            let _ = writeln!(
                out,
                "    linkStyle {} stroke:{CRITICAL_COLOUR},stroke-width:3px",
                critical_links.join(",")
            );
        }
        for (state, ranks) in &mut classes {
            ranks.sort_unstable();
            let names: Vec<String> = ranks.iter().map(|r| format!("t{r}")).collect();
            if let Some(colour) = state_colour(state) {
                let _ = writeln!(out, "    classDef {state} fill:{colour}");
                let _ = writeln!(out, "    class {} {state}", names.join(","));
            }
        }
        out
    }
}
