//! A singly linked list of jobs, highest priority first.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: u32,
    pub priority: u8,
    pub created: u64,
    pub name: String,
}

#[derive(Debug)]
struct Node {
    job: Job,
    next: Option<Box<Node>>,
}

#[derive(Debug, Default)]
pub struct Queue {
    head: Option<Box<Node>>,
    len: usize,
}

impl Queue {
    pub fn new() -> Queue {
        Queue::default()
    }

    /// Queues `job` after every job of higher or equal priority.
    pub fn insert(&mut self, job: Job) {
        let mut cursor = &mut self.head;
        while cursor.as_ref().is_some_and(|n| n.job.priority > job.priority) {
            cursor = &mut cursor.as_mut().expect("checked above").next;
        }
        match cursor {
            // BUG: an equal priority overwrites the queued job instead of
            // linking a new node after it.
            Some(node) if node.job.priority == job.priority => node.job = job,
            _ => {
                let next = cursor.take();
                *cursor = Some(Box::new(Node { job, next }));
                self.len += 1;
            }
        }
    }

    pub fn pop(&mut self) -> Option<Job> {
        let node = self.head.take()?;
        self.head = node.next;
        self.len -= 1;
        Some(node.job)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Priorities from head to tail (for debugging sessions).
    #[allow(dead_code)]
    pub fn priorities(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut cursor = &self.head;
        while let Some(node) = cursor {
            out.push(node.job.priority);
            cursor = &node.next;
        }
        out
    }
}
