//! Graphviz DOT output.

use std::fmt::Write as _;

use super::{CRITICAL_COLOUR, Layout, StateMap, state_colour};
use crate::dag::Dag;

impl Dag {
    /// The graph in Graphviz DOT: one `{rank=same; …}` subgraph per wave,
    /// critical edges bold red, states (when given) as fill colours.
    pub fn to_dot(&self, states: Option<&StateMap<'_>>) -> String {
        let layout = Layout::new(self);
        let mut out = String::from(
            "digraph tasks {\n    rankdir=TB;\n    node [shape=box, style=rounded];\n",
        );
        let node = |out: &mut String, i: usize, indent: &str| {
            let mut attrs: Vec<String> = Vec::new();
            let mut style = vec!["rounded"];
            if self.node_at(i).done {
                style.push("dashed");
            }
            if let Some(colour) = layout.state(states, i).and_then(state_colour) {
                style.push("filled");
                attrs.push(format!("fillcolor=\"{colour}\""));
            }
            if layout.critical_nodes.contains(&i) {
                attrs.push(format!("color=\"{CRITICAL_COLOUR}\", penwidth=2"));
            }
            if style.len() > 1 {
                attrs.insert(0, format!("style=\"{}\"", style.join(",")));
            }
            let attrs = if attrs.is_empty() {
                String::new()
            } else {
                format!(" [{}]", attrs.join(", "))
            };
            let _ = writeln!(out, "{indent}\"{}\"{attrs};", layout.id(i));
        };
        for (k, wave) in layout.waves.iter().enumerate() {
            let _ = writeln!(out, "    subgraph wave_{} {{\n        rank=same;", k + 1);
            for &i in wave {
                node(&mut out, i, "        ");
            }
            out.push_str("    }\n");
        }
        for &i in &layout.done {
            node(&mut out, i, "    ");
        }
        for &(a, b) in &layout.edges {
            let attrs = if layout.critical_edges.contains(&(a, b)) {
                format!(" [color=\"{CRITICAL_COLOUR}\", penwidth=2.5, style=bold]")
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "    \"{}\" -> \"{}\"{attrs};",
                layout.id(a),
                layout.id(b)
            );
        }
        out.push_str("}\n");
        out
    }
}
