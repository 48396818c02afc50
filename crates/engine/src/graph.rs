//! Dependency graphs (imports, role dependencies, dynamic includes) on `petgraph`, and the
//! one way a cycle among them is printed, so every cycle report reads the same.

use std::collections::HashMap;
use std::hash::Hash;

use petgraph::algo::astar;
use petgraph::graph::{DiGraph, NodeIndex};

/// Prints a cycle as `a -> b -> a` (the first node repeated at the end by the caller).
pub fn cycle_text<I, S>(chain: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    chain
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// A directed graph of "X needs Y" edges between keys, refusing the edge that would close a
/// cycle and saying which cycle.
#[derive(Debug)]
pub struct DepGraph<K> {
    graph: DiGraph<K, ()>,
    index: HashMap<K, NodeIndex>,
}

impl<K> Default for DepGraph<K> {
    fn default() -> Self {
        DepGraph {
            graph: DiGraph::new(),
            index: HashMap::new(),
        }
    }
}

impl<K: Clone + Eq + Hash> DepGraph<K> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    fn node(&mut self, key: &K) -> NodeIndex {
        if let Some(i) = self.index.get(key) {
            return *i;
        }
        let i = self.graph.add_node(key.clone());
        self.index.insert(key.clone(), i);
        i
    }

    /// Records that `from` needs `to`. When `to` already reaches `from`, the edge would
    /// close a cycle: it is not added, and the cycle is returned as
    /// `[from, to, …, from]` (for a self-dependency, `[from, from]`).
    pub fn add_edge(&mut self, from: &K, to: &K) -> Result<(), Vec<K>> {
        let (f, t) = (self.node(from), self.node(to));
        if let Some((_, path)) = astar(&self.graph, t, |n| n == f, |_| 1u32, |_| 0) {
            let mut cycle = vec![from.clone()];
            cycle.extend(path.into_iter().map(|n| self.graph[n].clone()));
            if f == t {
                cycle.truncate(2);
            }
            return Err(cycle);
        }
        self.graph.update_edge(f, t, ());
        Ok(())
    }

    /// Every key, each after everything it needs (dependencies first); the tests check
    /// with it that a refused edge leaves the graph acyclic.
    #[cfg(test)]
    pub fn order(&self) -> Vec<K> {
        // add_edge keeps the graph acyclic, so toposort cannot fail.
        let mut order: Vec<K> = petgraph::algo::toposort(&self.graph, None)
            .unwrap_or_default()
            .into_iter()
            .map(|n| self.graph[n].clone())
            .collect();
        order.reverse();
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_the_edge_that_closes_a_cycle_and_names_it() {
        let mut g = DepGraph::new();
        g.add_edge(&"a", &"b").unwrap();
        g.add_edge(&"b", &"c").unwrap();
        assert_eq!(g.add_edge(&"c", &"a"), Err(vec!["c", "a", "b", "c"]));
        assert_eq!(cycle_text(["c", "a", "b", "c"]), "c -> a -> b -> c");
        // The refused edge was not added: the graph still orders.
        assert_eq!(g.order(), vec!["c", "b", "a"]);
    }

    #[test]
    fn self_dependency_is_a_cycle_of_one() {
        let mut g = DepGraph::new();
        assert_eq!(g.add_edge(&"a", &"a"), Err(vec!["a", "a"]));
    }

    #[test]
    fn diamonds_are_not_cycles() {
        let mut g = DepGraph::new();
        for (f, t) in [("top", "l"), ("top", "r"), ("l", "base"), ("r", "base")] {
            g.add_edge(&f, &t).unwrap();
        }
        let order = g.order();
        let pos = |k| order.iter().position(|x| *x == k).unwrap();
        assert!(pos("base") < pos("l") && pos("base") < pos("r"));
        assert!(pos("l") < pos("top") && pos("r") < pos("top"));
    }
}
