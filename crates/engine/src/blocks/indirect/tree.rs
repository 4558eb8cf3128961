//! The multi-resolution partition tree of CMETS (paper §5.2, Algorithm 1) over the encoded query cube [0,1]^d:
//! a node at level l is the cell `[i/2^l, (i+1)/2^l)` in every dimension (2^d children per node: a quad-tree in
//! two dimensions), represented by its centre. Level 0 is the root. Querying a node observes the aggregate over its
//! cell (the paper leaves open how the node's radius enters p(x | a); we integrate the conditional over the cell,
//! so coarser nodes average over wider regions) with noise `noise_std[l]`, at cost `cost[l]`.
//!
//! [`ActiveSet`] is the leaf bookkeeping of Algorithm 1 (lines "if a_t ∈ L'_{t−1} … A_t = L_t ∪ L'_t").

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// A node: its level and its cell index in every query dimension (each in `0..2^level`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Node {
    /// Level (0 = root).
    pub level: u32,
    /// Cell index per dimension.
    pub index: Vec<u32>,
}

impl Node {
    /// Text id `level:i1,i2,…` used in suggestions and the policy state.
    pub fn id(&self) -> String {
        let idx: Vec<String> = self.index.iter().map(u32::to_string).collect();
        format!("{}:{}", self.level, idx.join(","))
    }
}

/// The tree's shape, costs and noise levels.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    d: usize,
    height: u32,
    cost: Vec<f64>,
    noise_std: Vec<f64>,
}

impl Tree {
    /// A tree over `d` query dimensions of the given height, with per-level cost and noise (length height + 1).
    pub fn new(d: usize, height: u32, cost: Vec<f64>, noise_std: Vec<f64>) -> Self {
        Self { d, height, cost, noise_std }
    }

    /// Deepest level.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Cost of querying a node at `level`.
    pub fn cost(&self, level: u32) -> f64 {
        self.cost[level.min(self.height) as usize]
    }

    /// Noise standard deviation at `level`.
    pub fn noise_std(&self, level: u32) -> f64 {
        self.noise_std[level.min(self.height) as usize]
    }

    /// The root.
    pub fn root(&self) -> Node {
        Node { level: 0, index: vec![0; self.d] }
    }

    /// Children (none at the deepest level), in lexicographic order.
    pub fn children(&self, node: &Node) -> Vec<Node> {
        if node.level >= self.height {
            return Vec::new();
        }
        (0..1u32 << self.d)
            .map(|bits| Node {
                level: node.level + 1,
                index: node.index.iter().enumerate().map(|(j, &i)| 2 * i + ((bits >> (self.d - 1 - j)) & 1)).collect(),
            })
            .collect()
    }

    /// Parent (`None` for the root).
    pub fn parent(&self, node: &Node) -> Option<Node> {
        (node.level > 0).then(|| Node { level: node.level - 1, index: node.index.iter().map(|i| i / 2).collect() })
    }

    /// The node's cell `(low, high)` in encoded query coordinates.
    pub fn cell(&self, node: &Node) -> (Vec<f64>, Vec<f64>) {
        let w = 1.0 / f64::from(1u32 << node.level);
        (
            node.index.iter().map(|&i| f64::from(i) * w).collect(),
            node.index.iter().map(|&i| f64::from(i + 1) * w).collect(),
        )
    }

    /// The node's centre.
    pub fn centre(&self, node: &Node) -> Vec<f64> {
        let w = 1.0 / f64::from(1u32 << node.level);
        node.index.iter().map(|&i| (f64::from(i) + 0.5) * w).collect()
    }

    /// Every node of `level`, in lexicographic order.
    pub fn level_nodes(&self, level: u32) -> Vec<Node> {
        let per = 1u32 << level;
        let total = (per as usize).pow(self.d as u32);
        (0..total)
            .map(|mut k| {
                let mut index = vec![0; self.d];
                for j in (0..self.d).rev() {
                    index[j] = (k % per as usize) as u32;
                    k /= per as usize;
                }
                Node { level, index }
            })
            .collect()
    }

    /// The node a query point stands for: the shallowest node whose centre is `a` (within 1e-7), otherwise the
    /// deepest node whose cell contains `a`.
    pub fn locate(&self, a: &[f64]) -> Node {
        for level in 0..=self.height {
            let per = f64::from(1u32 << level);
            let index: Vec<u32> = a.iter().map(|&v| ((v * per).floor().clamp(0.0, per - 1.0)) as u32).collect();
            let node = Node { level, index };
            if self.centre(&node).iter().zip(a).all(|(c, v)| (c - v).abs() <= 1e-7) {
                return node;
            }
        }
        let per = f64::from(1u32 << self.height);
        Node {
            level: self.height,
            index: a.iter().map(|&v| ((v * per).floor().clamp(0.0, per - 1.0)) as u32).collect(),
        }
    }
}

/// The leaves L_t and their not-yet-expanded children L'_t of Algorithm 1; the active set is A_t = L_t ∪ L'_t.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActiveSet {
    /// L_t.
    pub leaves: BTreeSet<Node>,
    /// L'_t.
    pub children: BTreeSet<Node>,
}

impl ActiveSet {
    /// Initialisation: L_0 = {root}, L'_0 = children(root).
    pub fn new(tree: &Tree) -> Self {
        let root = tree.root();
        Self { children: tree.children(&root).into_iter().collect(), leaves: BTreeSet::from([root]) }
    }

    /// The update after querying `a` (Algorithm 1, the if/else and the loop over leaves).
    pub fn update(&mut self, tree: &Tree, a: &Node) {
        if self.children.contains(a) {
            if let Some(p) = tree.parent(a) {
                self.leaves.remove(&p);
            }
            self.leaves.extend(tree.children(a));
            self.children.remove(a);
        } else {
            self.leaves.remove(a);
            self.leaves.extend(tree.children(a));
        }
        let grown: Vec<Node> = self.leaves.iter().flat_map(|l| tree.children(l)).collect();
        self.children.extend(grown);
    }

    /// A_t = L_t ∪ L'_t, in order.
    pub fn active(&self) -> Vec<Node> {
        self.leaves.union(&self.children).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        Tree::new(2, 3, vec![0.5, 1.0, 1.5, 2.0], vec![1.0, 0.5, 0.33, 0.25])
    }

    #[test]
    fn children_split_every_dimension_in_half() {
        let t = tree();
        let kids = t.children(&t.root());
        assert_eq!(kids.len(), 4);
        assert_eq!(kids[3], Node { level: 1, index: vec![1, 1] });
        assert_eq!(t.cell(&kids[1]), (vec![0.0, 0.5], vec![0.5, 1.0]));
        assert!(t.children(&Node { level: 3, index: vec![0, 0] }).is_empty());
        assert_eq!(t.parent(&Node { level: 2, index: vec![3, 1] }), Some(Node { level: 1, index: vec![1, 0] }));
    }

    #[test]
    fn locate_recovers_a_node_from_its_centre() {
        let t = tree();
        for level in 0..=3 {
            for n in t.level_nodes(level) {
                assert_eq!(t.locate(&t.centre(&n)), n);
            }
        }
        assert_eq!(t.locate(&[0.01, 0.99]), Node { level: 3, index: vec![0, 7] });
    }
}
