//! A byte trie of prefixed resource patterns: every pattern that is a prefix of a name, found
//! in one walk down the name's bytes.
//!
//! # Mental model
//!
//! Node 0 is the root (the empty prefix, which every name starts with); a node `n` levels
//! down stands for the `n` bytes on its path, and holds the items stored under exactly that
//! prefix. [`PrefixTrie::walk`] visits the root and then each node along the name until the
//! path ends, so it costs one child lookup per byte of the longest stored prefix the name
//! shares, whatever the number of patterns.
//!
//! Invariants: children are sorted by byte (binary search); a node other than the root has
//! an item or a child (removal prunes empty leaves into a free list that insertion reuses),
//! so the trie's size follows the live patterns, not the history of adds and removes. Byte
//! prefixes of valid UTF-8 equal `str::starts_with`, so no char boundary is checked.

/// Items of type `T` stored under byte-string prefixes.
#[derive(Clone, Debug)]
pub(crate) struct PrefixTrie<T> {
    nodes: Vec<Node<T>>,
    free: Vec<usize>,
}

#[derive(Clone, Debug)]
struct Node<T> {
    children: Vec<(u8, usize)>,
    items: Vec<T>,
}

impl<T> Default for Node<T> {
    fn default() -> Self {
        Self {
            children: Vec::new(),
            items: Vec::new(),
        }
    }
}

impl<T> Default for PrefixTrie<T> {
    fn default() -> Self {
        Self {
            nodes: vec![Node::default()],
            free: Vec::new(),
        }
    }
}

impl<T> PrefixTrie<T> {
    fn child(&self, node: usize, byte: u8) -> Option<usize> {
        let children = &self.nodes[node].children;
        children
            .binary_search_by_key(&byte, |&(b, _)| b)
            .ok()
            .map(|i| children[i].1)
    }

    /// Stores `item` under `prefix`.
    pub(crate) fn insert(&mut self, prefix: &[u8], item: T) {
        let mut node = 0;
        for &byte in prefix {
            node = match self.nodes[node]
                .children
                .binary_search_by_key(&byte, |&(b, _)| b)
            {
                Ok(i) => self.nodes[node].children[i].1,
                Err(i) => {
                    let new = match self.free.pop() {
                        Some(n) => n,
                        None => {
                            self.nodes.push(Node::default());
                            self.nodes.len() - 1
                        }
                    };
                    self.nodes[node].children.insert(i, (byte, new));
                    new
                }
            };
        }
        self.nodes[node].items.push(item);
    }

    /// Removes (and returns) the first item under exactly `prefix` that `is_it` accepts.
    pub(crate) fn remove(&mut self, prefix: &[u8], mut is_it: impl FnMut(&T) -> bool) -> Option<T> {
        let mut path = Vec::with_capacity(prefix.len() + 1);
        let mut node = 0;
        path.push(node);
        for &byte in prefix {
            node = self.child(node, byte)?;
            path.push(node);
        }
        let items = &mut self.nodes[node].items;
        let pos = items.iter().position(&mut is_it)?;
        let item = items.remove(pos);
        // Prune the leaves this removal emptied, bottom-up; never the root.
        for depth in (1..path.len()).rev() {
            let n = path[depth];
            if !self.nodes[n].items.is_empty() || !self.nodes[n].children.is_empty() {
                break;
            }
            let parent = path[depth - 1];
            let byte = prefix[depth - 1];
            let siblings = &mut self.nodes[parent].children;
            if let Ok(i) = siblings.binary_search_by_key(&byte, |&(b, _)| b) {
                siblings.remove(i);
            }
            self.nodes[n] = Node::default();
            self.free.push(n);
        }
        Some(item)
    }

    /// Calls `visit` with the items of every stored prefix of `name`, shortest first, until
    /// `visit` returns true; returns whether it did.
    #[inline]
    pub(crate) fn walk(&self, name: &[u8], mut visit: impl FnMut(&[T]) -> bool) -> bool {
        let mut node = 0;
        let mut rest = name.iter();
        loop {
            let n = &self.nodes[node];
            if !n.items.is_empty() && visit(&n.items) {
                return true;
            }
            if n.children.is_empty() {
                return false;
            }
            let Some(&byte) = rest.next() else {
                return false;
            };
            match n.children.binary_search_by_key(&byte, |&(b, _)| b) {
                Ok(i) => node = n.children[i].1,
                Err(_) => return false,
            }
        }
    }

    /// Nodes in use, the root included (tests: removal must prune).
    #[cfg(test)]
    pub(crate) fn live_nodes(&self) -> usize {
        self.nodes.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &PrefixTrie<&'static str>, name: &str) -> Vec<&'static str> {
        let mut out = Vec::new();
        t.walk(name.as_bytes(), |items| {
            out.extend_from_slice(items);
            false
        });
        out
    }

    #[test]
    fn walk_finds_every_stored_prefix_shortest_first() {
        let mut t = PrefixTrie::default();
        for p in ["", "a", "ab", "abc", "b", "abd", "abcdef"] {
            t.insert(p.as_bytes(), p);
        }
        assert_eq!(found(&t, "abcd"), ["", "a", "ab", "abc"]);
        assert_eq!(found(&t, "ab"), ["", "a", "ab"]);
        assert_eq!(found(&t, "b"), ["", "b"]);
        assert_eq!(found(&t, "c"), [""]);
        assert_eq!(found(&t, ""), [""]);
        assert_eq!(found(&t, "abcdefg"), ["", "a", "ab", "abc", "abcdef"]);
    }

    #[test]
    fn walk_stops_when_visit_says_so() {
        let mut t = PrefixTrie::default();
        t.insert(b"a", 1);
        t.insert(b"ab", 2);
        let mut seen = Vec::new();
        let stopped = t.walk(b"abc", |items| {
            seen.extend_from_slice(items);
            true
        });
        assert!(stopped);
        assert_eq!(seen, [1]);
    }

    #[test]
    fn remove_prunes_and_reuses_nodes() {
        let mut t = PrefixTrie::default();
        t.insert(b"abc", 1);
        t.insert(b"abc", 2);
        t.insert(b"ab", 3);
        assert_eq!(t.live_nodes(), 4);
        assert_eq!(t.remove(b"abc", |&x| x == 9), None);
        assert_eq!(t.remove(b"abx", |_| true), None);
        assert_eq!(t.remove(b"abc", |&x| x == 1), Some(1));
        assert_eq!(t.live_nodes(), 4, "abc still holds 2");
        assert_eq!(t.remove(b"abc", |&x| x == 2), Some(2));
        assert_eq!(t.live_nodes(), 3, "abc pruned, ab holds 3");
        assert_eq!(t.remove(b"ab", |_| true), Some(3));
        assert_eq!(t.live_nodes(), 1, "only the root is left");
        t.insert(b"xy", 4);
        assert_eq!(t.nodes.len(), 4, "freed nodes are reused");
        let mut seen = Vec::new();
        t.walk(b"xyz", |i| {
            seen.extend_from_slice(i);
            false
        });
        assert_eq!(seen, [4]);
    }
}
