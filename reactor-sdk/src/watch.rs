//! Watchers of one key in creation order: the list both signal watches
//! (by signal number) and filesystem watches (by inotify watch descriptor)
//! keep, generic over the reactor's event type.
//!
//! # Invariants
//!
//! - **WL1** A key has an entry exactly while its list is not empty:
//!   [`WatchList::add`] says when a key gets its first watcher (the reactor
//!   then starts the kernel's watch) and [`WatchList::remove`] when it lost
//!   its last (the reactor stops it).

use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;

/// Watchers per key, in creation order (see the module doc).
#[derive(Debug)]
pub struct WatchList<K, T> {
    by_key: HashMap<K, Vec<Rc<T>>>,
}

impl<K, T> Default for WatchList<K, T> {
    fn default() -> WatchList<K, T> {
        WatchList {
            by_key: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq + Copy, T> WatchList<K, T> {
    /// Whether `key` has a watcher.
    pub fn contains(&self, key: K) -> bool {
        self.by_key.contains_key(&key)
    }

    /// Adds a watcher of `key`; true if it is the key's first (WL1).
    pub fn add(&mut self, key: K, watcher: Rc<T>) -> bool {
        let list = self.by_key.entry(key).or_default();
        list.push(watcher);
        list.len() == 1
    }

    /// Removes `watcher` from `key`'s list; true if that was its last (WL1).
    pub fn remove(&mut self, key: K, watcher: &Rc<T>) -> bool {
        let Some(list) = self.by_key.get_mut(&key) else {
            return false;
        };
        list.retain(|w| !Rc::ptr_eq(w, watcher));
        if list.is_empty() {
            self.by_key.remove(&key);
            return true;
        }
        false
    }

    /// A copy of `key`'s watchers (to call back with no borrow held).
    pub fn get(&self, key: K) -> Option<Vec<Rc<T>>> {
        self.by_key.get(&key).cloned()
    }

    /// Takes `key`'s whole list (the kernel ended the watch).
    pub fn take(&mut self, key: K) -> Option<Vec<Rc<T>>> {
        self.by_key.remove(&key)
    }

    /// A copy of every watcher.
    pub fn all(&self) -> Vec<Rc<T>> {
        self.by_key.values().flatten().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_watchers_are_reported() {
        let mut list: WatchList<i32, u8> = WatchList::default();
        let (a, b) = (Rc::new(1), Rc::new(2));
        assert!(list.add(7, Rc::clone(&a)));
        assert!(!list.add(7, Rc::clone(&b)));
        assert_eq!(list.get(7).map(|l| l.len()), Some(2));
        assert!(!list.remove(7, &a));
        assert!(list.remove(7, &b));
        assert!(!list.contains(7));
        assert!(!list.remove(7, &b));
    }
}
