//! The paths of a function's machine code that skip a region: the code's
//! control-flow graph, instruction by instruction, with each instruction's
//! source line, and the search for paths that go from the code before the
//! region to the code after its anchor statement without passing any of the
//! region's locations (jump threading: the optimizer jumps past a test whose
//! outcome it knows on that path, and the anchor statement's code with it).

/// How control leaves an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// To the next instruction (calls included: they return).
    Next,
    /// An unconditional direct jump.
    Jump(u64),
    /// A conditional direct jump: to the target or the next instruction.
    Branch(u64),
    /// A jump whose target the code does not say (a jump table): it may go
    /// anywhere in the function.
    Indirect,
    /// Out of the function (a return, a trap, a tail call).
    Stop,
}

/// One instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub address: u64,
    pub next: u64,
    pub flow: Flow,
    /// Its source line in the region's function: `None` for code of another
    /// function sharing the frame, `Some(0)` for code of no line (the
    /// optimizer's glue, merged code), and for code of a callee inlined into
    /// the function, the line of the call.
    pub line: Option<u32>,
}

/// The machine code of a function with its flow of control.
pub struct Cfg {
    insns: Vec<Insn>,
    successors: Vec<Vec<usize>>,
    /// How many edges enter each instruction.
    entries: Vec<u32>,
    /// Edges `(from, to)` that close a loop (found by a depth-first walk
    /// from the entry).
    back_edges: std::collections::HashSet<(usize, usize)>,
}

/// A path that reaches the code after the anchor statement without passing
/// a region location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bypass {
    /// The last instruction of the path's code before it leaves for the
    /// code after the anchor.
    pub from: u64,
    /// The line of the code that instruction ends.
    pub from_line: u32,
    /// Where it goes: code of a later line that the anchor's code also goes to.
    pub to: u64,
    pub to_line: u32,
    /// `Ok(())` when a location at `from` serves the path: `from` is an
    /// unconditional jump (so only this path passes there) after code of
    /// earlier lines only. Otherwise why not.
    pub servable: Result<(), String>,
}

impl Cfg {
    /// The graph of `insns` (sorted by address), entered at the first one.
    pub fn new(insns: Vec<Insn>) -> Cfg {
        let at = |address: u64| insns.binary_search_by_key(&address, |i| i.address).ok();
        let successors: Vec<Vec<usize>> = insns
            .iter()
            .enumerate()
            .map(|(n, i)| {
                let next = at(i.next).filter(|&m| m == n + 1);
                match i.flow {
                    Flow::Next => next.into_iter().collect(),
                    Flow::Jump(t) => at(t).into_iter().collect(),
                    Flow::Branch(t) => at(t).into_iter().chain(next).collect(),
                    Flow::Indirect | Flow::Stop => Vec::new(),
                }
            })
            .collect();
        // Depth-first from the entry, then from code not reached that way
        // (reached through jump tables), in address order.
        let mut back_edges = std::collections::HashSet::new();
        let mut state = vec![0u8; insns.len()]; // 0 new, 1 on the stack, 2 done
        for root in 0..insns.len() {
            if state[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            while let Some((node, child)) = stack.last_mut() {
                let node = *node;
                if let Some(&next) = successors[node].get(*child) {
                    *child += 1;
                    match state[next] {
                        0 => {
                            state[next] = 1;
                            stack.push((next, 0));
                        }
                        1 => {
                            back_edges.insert((node, next));
                        }
                        _ => {}
                    }
                } else {
                    state[node] = 2;
                    stack.pop();
                }
            }
        }
        let mut entries = vec![0u32; insns.len()];
        for s in successors.iter().flatten() {
            entries[*s] += 1;
        }
        Cfg { insns, successors, entries, back_edges }
    }

    pub(crate) fn index(&self, address: u64) -> Option<usize> {
        self.insns.binary_search_by_key(&address, |i| i.address).ok()
    }

    /// The loops' back edges `(from, to)`: `to` is the loop's header.
    pub(crate) fn back_edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.back_edges.iter().copied()
    }

    pub(crate) fn successors(&self, n: usize) -> &[usize] {
        &self.successors[n]
    }

    pub(crate) fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Instructions reachable from `from` (included) without entering one
    /// that `blocked` says (loops' back edges taken); `None` when that code
    /// may take a jump table (it may go anywhere).
    pub(crate) fn reach(&self, from: &[usize], blocked: impl Fn(usize) -> bool) -> Option<Vec<bool>> {
        self.walk(from, |_, s| blocked(s))
    }

    /// Instructions reachable from `from` (included) without taking an edge
    /// `(n, s)` that `blocked` says; `None` when that code may take a jump
    /// table.
    fn walk(&self, from: &[usize], blocked: impl Fn(usize, usize) -> bool) -> Option<Vec<bool>> {
        let mut seen = vec![false; self.insns.len()];
        let mut work: Vec<usize> = from.to_vec();
        for &n in from {
            seen[n] = true;
        }
        while let Some(n) = work.pop() {
            if self.insns[n].flow == Flow::Indirect {
                return None;
            }
            for &s in &self.successors[n] {
                if !seen[s] && !blocked(n, s) {
                    seen[s] = true;
                    work.push(s);
                }
            }
        }
        Some(seen)
    }

    /// Instructions from which one of `to` (included) is reachable without
    /// passing an instruction that `blocked` says.
    pub(crate) fn reaching(&self, to: &[usize], blocked: impl Fn(usize) -> bool) -> Vec<bool> {
        let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); self.insns.len()];
        for (n, s) in self.successors.iter().enumerate() {
            for &m in s {
                predecessors[m].push(n);
            }
        }
        let mut seen = vec![false; self.insns.len()];
        let mut work: Vec<usize> = to.to_vec();
        for &n in to {
            seen[n] = true;
        }
        while let Some(n) = work.pop() {
            for &p in &predecessors[n] {
                if !seen[p] && !blocked(p) {
                    seen[p] = true;
                    work.push(p);
                }
            }
        }
        seen
    }

    /// The entry of the code `inside` (an inlined copy): the instruction of it, `hint` (its
    /// `DW_AT_entry_pc`) or one entered from reachable code outside it (or the function's entry
    /// itself), that every path from the function's entry (instruction 0) to the copy's code
    /// passes. Code no path reaches, such as alignment padding, never runs and does not count.
    /// `None` when no instruction does, or the code may take a jump table.
    pub(crate) fn entry_of(&self, inside: &[bool], hint: Option<usize>) -> Option<usize> {
        let reachable = self.reach(&[0], |_| false)?;
        let mut candidates: Vec<usize> = hint.into_iter().collect();
        for n in 0..inside.len() {
            if !inside[n] && reachable[n] {
                candidates.extend(self.successors[n].iter().copied().filter(|&s| inside[s]));
            }
        }
        if inside.first() == Some(&true) {
            candidates.push(0);
        }
        let mut seen = Vec::new();
        for e in candidates {
            if !inside[e] || !reachable[e] || seen.contains(&e) {
                continue;
            }
            seen.push(e);
            // The function's entry reaches no code of the copy without passing `e`.
            if e == 0 {
                return Some(e);
            }
            let reached = self.reach(&[0], |m| m == e)?;
            if !(0..inside.len()).any(|c| inside[c] && reached[c]) {
                return Some(e);
            }
        }
        None
    }

    /// The strongly connected components of the graph restricted to the
    /// instructions `keep` says: for each instruction its component's
    /// number, `None` outside `keep` or on no cycle (a component of one
    /// instruction without an edge to itself).
    pub(crate) fn cycles(&self, keep: impl Fn(usize) -> bool) -> Vec<Option<usize>> {
        let n = self.insns.len();
        let kept: Vec<bool> = (0..n).map(&keep).collect();
        // Kosaraju: finishing order on the graph, then components on the reverse graph.
        let mut order = Vec::with_capacity(n);
        let mut state = vec![false; n];
        for root in (0..n).filter(|&r| kept[r]) {
            if state[root] {
                continue;
            }
            state[root] = true;
            let mut stack = vec![(root, 0usize)];
            while let Some((node, child)) = stack.last_mut() {
                let node = *node;
                if let Some(&next) = self.successors[node].get(*child) {
                    *child += 1;
                    if kept[next] && !state[next] {
                        state[next] = true;
                        stack.push((next, 0));
                    }
                } else {
                    order.push(node);
                    stack.pop();
                }
            }
        }
        let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (from, s) in self.successors.iter().enumerate() {
            for &to in s {
                if kept[from] && kept[to] {
                    predecessors[to].push(from);
                }
            }
        }
        let mut component = vec![usize::MAX; n];
        let mut sizes = Vec::new();
        for &root in order.iter().rev() {
            if component[root] != usize::MAX {
                continue;
            }
            let id = sizes.len();
            let mut size = 0;
            component[root] = id;
            let mut work = vec![root];
            while let Some(m) = work.pop() {
                size += 1;
                for &p in &predecessors[m] {
                    if component[p] == usize::MAX {
                        component[p] = id;
                        work.push(p);
                    }
                }
            }
            sizes.push(size);
        }
        (0..n)
            .map(|m| {
                let id = component[m];
                (id != usize::MAX && (sizes[id] > 1 || self.successors[m].contains(&m))).then_some(id)
            })
            .collect()
    }

    /// Instructions reachable from `from` without taking a loop's back edge
    /// (`from` included); `None` when that code may take a jump table (it
    /// may go anywhere).
    fn forward(&self, from: &[usize]) -> Option<Vec<bool>> {
        self.walk(from, |n, s| self.back_edges.contains(&(n, s)))
    }

    /// The line of the code before the anchor's that instruction `n` ends:
    /// the nearest line before `anchor_line` in its block, up to `n`
    /// (code of no line and of later lines, hoisted there, passed over);
    /// `None` when the block has none, or code of the anchor's line.
    fn line_ending(&self, n: usize, anchor_line: u32) -> Option<u32> {
        let mut m = n;
        loop {
            match self.insns[m].line? {
                0 => {}
                line if line < anchor_line => return Some(line),
                line if line == anchor_line => return None,
                _ => {}
            }
            if !self.block_goes_back(m) {
                return None;
            }
            m -= 1;
        }
    }

    /// Whether instruction `m` is entered only from the one before it.
    fn block_goes_back(&self, m: usize) -> bool {
        m > 0 && self.falls_through(m - 1) && self.entries[m] == 1
    }

    fn falls_through(&self, n: usize) -> bool {
        matches!(self.insns[n].flow, Flow::Next | Flow::Branch(_)) && self.insns[n].next == self.insns[n + 1].address
    }

    /// Where control leaves the code of the statement of lines `first..=last` (the last statement
    /// of a block whose closing brace has no code of its own: a dev build's loop body ends with
    /// that statement's code and a jump back to the loop's head, of the loop's line). Each exit is
    /// the instruction the statement's code goes on to, when only that edge enters it, or else the
    /// statement's own unconditional jump there. `Err` says why a place cannot be found: an edge
    /// into code other paths reach too, or code of the statement that continues after the exit
    /// on the same path (code of several lines interleaved, as the optimizer does).
    ///
    /// Code the statement's goes on to that comes back to it is either code of another line
    /// inside it (not an exit) or, when it has a row of its own of an earlier line of the block
    /// (`row_starts`), the next copy of the loop's body in an unrolled loop (refused: measured
    /// with clang -O2, the loop's counter already holds the next iteration's value there).
    pub fn statement_exits(&self, first: u32, last: u32, row_starts: impl Fn(u64) -> bool) -> Result<Vec<u64>, String> {
        let of_statement = |n: usize| matches!(self.insns[n].line, Some(l) if l >= first && l <= last);
        let mut exits = Vec::new();
        for n in (0..self.insns.len()).filter(|&n| of_statement(n)) {
            for &s in &self.successors[n] {
                // A trap of no line after a call that does not return (a panic) is never run.
                if of_statement(s) || (self.insns[s].line == Some(0) && self.insns[s].flow == Flow::Stop) {
                    continue;
                }
                // A jump back to a loop's head ends the iteration: the next one runs the
                // statement again. The head is entered from before the loop too: the location
                // is the jump itself (it changes nothing).
                let next_iteration = self.back_edges.contains(&(n, s));
                let at = if next_iteration && matches!(self.insns[n].flow, Flow::Jump(_) | Flow::Branch(_)) {
                    self.insns[n].address
                } else if self.entries[s] == 1 {
                    self.insns[s].address
                } else if matches!(self.insns[n].flow, Flow::Jump(_)) {
                    self.insns[n].address
                } else {
                    return Err(format!(
                        "at {:#x} the code of line {} goes on to code that other paths reach too ({:#x})",
                        self.insns[n].address,
                        self.insns[n].line.unwrap_or(0),
                        self.insns[s].address
                    ));
                };
                let earlier = |m: usize| {
                    matches!(self.insns[m].line, Some(l) if l > 0 && l < first) && row_starts(self.insns[m].address)
                };
                match if next_iteration {
                    Some((false, true, false))
                } else {
                    self.comes_back(s, &of_statement, &earlier)
                } {
                    // The next copy of an unrolled loop's body: the loop's variables may hold
                    // the next iteration's values there already (the step has no code of its
                    // own), so no place serves the region.
                    Some((true, false, true)) => {
                        return Err(format!(
                            "the loop is unrolled: at {:#x} the code of line {} goes on to the next copy of the \
                             loop's body, where the loop's variables may already hold the next iteration's values",
                            self.insns[n].address,
                            self.insns[n].line.unwrap_or(0)
                        ))
                    }
                    // Code of another line in the middle of the statement's (a reload the line
                    // table gives the line before it): not an exit.
                    Some((true, false, false)) => continue,
                    Some((false, _, _)) => {}
                    Some((true, true, _)) => {
                        return Err(format!(
                            "after {:#x} the code of line {} continues on some paths and not on others",
                            self.insns[s].address,
                            self.insns[n].line.unwrap_or(0)
                        ))
                    }
                    None => return Err(format!("the code after {:#x} may take a jump table", self.insns[n].address)),
                }
                if !exits.contains(&at) {
                    exits.push(at);
                }
            }
        }
        exits.sort_unstable();
        Ok(exits)
    }

    /// Whether the paths from instruction `s` come back to code `of_statement` before they leave
    /// (return, trap, or take a loop's back edge), whether some leave without, and whether they
    /// pass an instruction `earlier` on the way: `(comes back, leaves, earlier)`; `None` when
    /// that code may take a jump table.
    fn comes_back(
        &self,
        s: usize,
        of_statement: &impl Fn(usize) -> bool,
        earlier: &impl Fn(usize) -> bool,
    ) -> Option<(bool, bool, bool)> {
        let (mut back, mut leaves, mut passed) = (false, false, false);
        let mut seen = vec![false; self.insns.len()];
        let mut work = vec![s];
        seen[s] = true;
        while let Some(m) = work.pop() {
            if of_statement(m) {
                back = true;
                continue;
            }
            if self.insns[m].flow == Flow::Indirect {
                return None;
            }
            passed |= earlier(m);
            if self.successors[m].is_empty() {
                leaves = true;
            }
            for &t in &self.successors[m] {
                if self.back_edges.contains(&(m, t)) {
                    leaves = true;
                } else if !seen[t] {
                    seen[t] = true;
                    work.push(t);
                }
            }
        }
        Some((back, leaves, passed))
    }

    /// The paths that go from code of lines before `anchor_line` to the code
    /// after the anchor statement's code without passing a location in
    /// `locations`. The anchor statement's code is that of line `line` (the
    /// anchor's, or the later line standing in for it) reached from the
    /// locations; the code after it is where its conditional jumps go next,
    /// when that is code of a later line. A path counts when no location can follow on it
    /// (short of a loop's next iteration) and none came before it.
    pub fn bypasses(&self, locations: &[u64], anchor_line: u32, line: u32) -> Vec<Bypass> {
        let starts: Vec<usize> = locations.iter().filter_map(|&a| self.index(a)).collect();
        if starts.is_empty() {
            return Vec::new();
        }
        // The anchor statement's code.
        let mut anchor = vec![false; self.insns.len()];
        let mut work = starts.clone();
        for &n in &starts {
            anchor[n] = true;
        }
        while let Some(n) = work.pop() {
            for &s in &self.successors[n] {
                if !anchor[s] && self.insns[s].line == Some(line) {
                    anchor[s] = true;
                    work.push(s);
                }
            }
        }
        // Where its tests go next. Only a test can be skipped this way (the
        // optimizer knows its outcome on a path): code that goes where the
        // anchor's plain code goes next (`goto out;` before a region
        // anchored on `work();` with `out:` after it) skips no work of the
        // anchor's and is not judged.
        let mut after = vec![false; self.insns.len()];
        for n in (0..self.insns.len()).filter(|&n| anchor[n] && matches!(self.insns[n].flow, Flow::Branch(_))) {
            for &s in &self.successors[n] {
                if !anchor[s] && self.insns[s].line.is_some_and(|l| l > line) {
                    after[s] = true;
                }
            }
        }
        if !after.contains(&true) {
            return Vec::new();
        }
        let Some(after_locations) = self.forward(&starts) else { return Vec::new() };
        let mut out = Vec::new();
        for (n, insn) in self.insns.iter().enumerate() {
            if anchor[n] || after_locations[n] {
                continue;
            }
            let Some(&to) = self.successors[n].iter().find(|&&s| after[s]) else { continue };
            let Some(from_line) = self.line_ending(n, anchor_line) else { continue };
            // A location may still follow (the path is the branch that
            // decides whether the region runs), or the code may go anywhere.
            match self.forward(&[n]) {
                Some(reach) if !starts.iter().any(|&s| reach[s]) => {}
                _ => continue,
            }
            let servable = if !matches!(insn.flow, Flow::Jump(_)) {
                Err(format!(
                    "the instruction there {} the path with another one",
                    if matches!(insn.flow, Flow::Branch(_)) { "is a conditional jump: it shares" } else { "shares" }
                ))
            } else {
                // The code of this block that ran before the jump.
                let mut m = n;
                let mut later = None;
                while self.block_goes_back(m) {
                    m -= 1;
                    if let Some(l) = self.insns[m].line.filter(|&l| l >= anchor_line) {
                        later = Some(l);
                        break;
                    }
                }
                match later {
                    Some(l) => Err(format!("code of line {l} runs before it on that path")),
                    None => Ok(()),
                }
            };
            out.push(Bypass {
                from: insn.address,
                from_line,
                to: self.insns[to].address,
                to_line: self.insns[to].line.unwrap_or(0),
                servable,
            });
        }
        out
    }
}

/// The instructions of `bytes` at `ip` (x86-64), with the lines `line`
/// gives; `inside` says which addresses are the function's (a jump
/// elsewhere is a tail call).
pub fn decode(bytes: &[u8], ip: u64, inside: impl Fn(u64) -> bool, line: impl Fn(u64) -> Option<u32>) -> Vec<Insn> {
    use iced_x86::{Decoder, DecoderOptions, FlowControl, OpKind};
    let mut out = Vec::new();
    for i in Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE) {
        let direct = i.op_count() > 0 && matches!(i.op0_kind(), OpKind::NearBranch64 | OpKind::NearBranch32);
        let flow = match i.flow_control() {
            FlowControl::Next | FlowControl::Call | FlowControl::IndirectCall | FlowControl::Interrupt => Flow::Next,
            FlowControl::UnconditionalBranch if direct && inside(i.near_branch_target()) => {
                Flow::Jump(i.near_branch_target())
            }
            // A jump out of the function's code is a tail call.
            FlowControl::UnconditionalBranch => Flow::Stop,
            FlowControl::ConditionalBranch if direct => Flow::Branch(i.near_branch_target()),
            FlowControl::ConditionalBranch => Flow::Indirect,
            FlowControl::IndirectBranch => Flow::Indirect,
            FlowControl::Return | FlowControl::Exception | FlowControl::XbeginXabortXend => Flow::Stop,
        };
        out.push(Insn { address: i.ip(), next: i.next_ip(), flow, line: line(i.ip()) });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(address: u64, flow: Flow, line: u32) -> Insn {
        Insn { address, next: address + 1, flow, line: Some(line) }
    }

    /// Shaped like clang -O2's `split` in
    /// tests/programs/support/fork_threaded.c, one byte per instruction: `if (child > 0) waitpid(..); /* region */
    /// if (child == 0) _exit(0); return a;` with the parent's path jumping
    /// from after `waitpid` straight to `return a`.
    fn threaded() -> Vec<Insn> {
        vec![
            insn(0, Flow::Next, 22),       // fork()
            insn(1, Flow::Next, 23),       // test
            insn(2, Flow::Branch(6), 23),  // jle
            insn(3, Flow::Next, 24),       // waitpid args
            insn(4, Flow::Next, 24),       // call waitpid
            insn(5, Flow::Jump(7), 0),     // jmp past the second test
            insn(6, Flow::Branch(10), 25), // je: the anchor `if (child == 0)`
            insn(7, Flow::Next, 27),       // return a
            insn(8, Flow::Stop, 27),
            insn(9, Flow::Stop, 0),
            insn(10, Flow::Next, 26), // _exit(0)
            insn(11, Flow::Stop, 26),
        ]
    }

    /// A dev build's `for` body ending with `done += item * 2;` (line 217) and a region: the
    /// statement's code, its overflow check's panic path, then the jump back to the loop's head
    /// (line 216).
    fn loop_body_end() -> Vec<Insn> {
        vec![
            insn(0, Flow::Next, 216),      // next()
            insn(1, Flow::Branch(9), 216), // None: leave the loop
            insn(2, Flow::Next, 217),      // add
            insn(3, Flow::Branch(7), 217), // overflow
            insn(4, Flow::Next, 217),      // store done
            insn(5, Flow::Jump(0), 216),   // back to the head
            insn(6, Flow::Stop, 0),
            insn(7, Flow::Next, 217), // panic
            insn(8, Flow::Stop, 0),   // ud2
            insn(9, Flow::Stop, 219), // after the loop
        ]
    }

    #[test]
    fn a_loop_body_ends_where_its_last_statement_goes_back_to_the_head() {
        let cfg = Cfg::new(loop_body_end());
        assert_eq!(cfg.statement_exits(217, 217, |_| true), Ok(vec![5]));
    }

    #[test]
    fn a_statement_jumping_back_to_the_loop_head_ends_there() {
        // The statement's own last instruction is the jump back (the loop's head is entered
        // from before the loop too).
        let mut code = loop_body_end();
        code[5] = insn(5, Flow::Jump(0), 217);
        let cfg = Cfg::new(code);
        assert_eq!(cfg.statement_exits(217, 217, |_| true), Ok(vec![5]));
    }

    #[test]
    fn code_of_another_line_inside_the_statement_is_no_exit() {
        // Line 217's code split by a reload the line table gives line 220, which falls back into it.
        let mut code = loop_body_end();
        code[3] = insn(3, Flow::Next, 220);
        let cfg = Cfg::new(code);
        assert_eq!(cfg.statement_exits(217, 217, |_| true), Ok(vec![5]));
    }

    /// clang -O2's fully unrolled `for (w = 0; w < 3; w++) { pthread_join(t[w], ..); sum +=
    /// shards[w].total; /* region */ }`: three copies of the body, lines 43 and 44; `w` is the
    /// next copy's from its first instruction on.
    #[test]
    fn the_copies_of_an_unrolled_body_are_refused_not_served_with_the_next_iterations_values() {
        let code = vec![
            insn(0, Flow::Next, 43), // pthread_join(t[0])
            insn(1, Flow::Next, 44), // sum = shards[0].total
            insn(2, Flow::Next, 43), // pthread_join(t[1])
            insn(3, Flow::Next, 44), // sum += shards[1].total
            insn(4, Flow::Next, 43), // pthread_join(t[2])
            insn(5, Flow::Next, 44), // sum += shards[2].total
            insn(6, Flow::Next, 46), // printf
            insn(7, Flow::Stop, 47),
        ];
        let cfg = Cfg::new(code);
        let why = cfg.statement_exits(44, 44, |_| true).unwrap_err();
        assert!(why.contains("the loop is unrolled: at 0x1 the code of line 44 goes on to the next copy"), "{why}");
        // Without rows of their own the instructions of line 43 are code inside the statement.
        assert_eq!(cfg.statement_exits(44, 44, |_| false), Ok(vec![6]));
    }

    #[test]
    fn a_statement_that_goes_on_only_on_some_paths_has_no_end() {
        // After line 217's first part, a test of line 216 either leaves the loop or comes back.
        let mut code = loop_body_end();
        code[3] = insn(3, Flow::Branch(9), 216);
        let cfg = Cfg::new(code);
        let why = cfg.statement_exits(217, 217, |_| true).unwrap_err();
        assert!(why.contains("continues on some paths and not on others"), "{why}");
    }

    #[test]
    fn a_threaded_jump_past_the_anchor_is_a_servable_bypass() {
        let cfg = Cfg::new(threaded());
        let found = cfg.bypasses(&[6], 25, 25);
        assert_eq!(found, vec![Bypass { from: 5, from_line: 24, to: 7, to_line: 27, servable: Ok(()) }]);
        // Served, nothing is left.
        assert_eq!(cfg.bypasses(&[5, 6], 25, 25), vec![]);
    }

    #[test]
    fn the_branch_that_decides_whether_the_region_runs_is_no_bypass() {
        // `if (c) { /* region */ if (d) foo(); } bar();`: the first test's
        // jump goes to `bar` as the second's does, but the region's location
        // follows the first test on its other path.
        let cfg = Cfg::new(vec![
            insn(0, Flow::Next, 10),
            insn(1, Flow::Branch(4), 10), // if (c)
            insn(2, Flow::Branch(4), 11), // if (d): the anchor
            insn(3, Flow::Next, 12),      // foo()
            insn(4, Flow::Next, 13),      // bar()
            insn(5, Flow::Stop, 14),
        ]);
        assert_eq!(cfg.bypasses(&[2], 11, 11), vec![]);
    }

    #[test]
    fn a_jump_to_where_plain_anchor_code_goes_is_no_bypass() {
        // `if (!ok) { log(); goto out; } /* region */ work(); out: cleanup();`:
        // the `goto` skips the region as written.
        let cfg = Cfg::new(vec![
            insn(0, Flow::Branch(3), 10), // if (!ok)
            insn(1, Flow::Next, 11),      // log()
            insn(2, Flow::Jump(4), 11),   // goto out
            insn(3, Flow::Next, 13),      // work(): the anchor
            insn(4, Flow::Next, 15),      // cleanup()
            insn(5, Flow::Stop, 16),
        ]);
        assert_eq!(cfg.bypasses(&[3], 13, 13), vec![]);
    }

    #[test]
    fn a_threaded_jump_in_a_loop_is_found_past_the_next_iteration() {
        // `for (..) { if (k) b(); /* region */ if (k) d(); e(); }`: after `b()`
        // the code jumps straight to `d()`. The loop's back edge leads to the
        // region's location in the next iteration, which does not serve this one.
        let cfg = Cfg::new(vec![
            insn(0, Flow::Next, 5),      // i = 0
            insn(1, Flow::Branch(9), 5), // i < n
            insn(2, Flow::Branch(5), 6), // if (k)
            insn(3, Flow::Next, 6),      // b()
            insn(4, Flow::Jump(6), 0),   // past the second test
            insn(5, Flow::Branch(7), 7), // if (k): the anchor
            insn(6, Flow::Next, 8),      // d()
            insn(7, Flow::Next, 9),      // e()
            insn(8, Flow::Jump(1), 5),   // i++, back to the test
            insn(9, Flow::Stop, 11),
        ]);
        assert_eq!(
            cfg.bypasses(&[5], 7, 7),
            vec![Bypass { from: 4, from_line: 6, to: 6, to_line: 8, servable: Ok(()) }]
        );
        assert_eq!(cfg.bypasses(&[4, 5], 7, 7), vec![]);
    }

    #[test]
    fn a_conditional_bypass_or_one_after_later_code_is_reported_not_served() {
        // The bypass is the conditional jump itself: a location there would
        // also run on its other path.
        let cfg = Cfg::new(vec![
            insn(0, Flow::Next, 22),
            insn(1, Flow::Branch(4), 24), // jumps past the anchor
            insn(2, Flow::Stop, 24),      // the other path leaves
            insn(3, Flow::Branch(5), 25), // the anchor (reached from elsewhere)
            insn(4, Flow::Next, 27),
            insn(5, Flow::Stop, 27),
        ]);
        let cfg2 = Cfg::new(vec![
            insn(0, Flow::Next, 22),
            insn(1, Flow::Branch(6), 23),
            insn(2, Flow::Next, 24),
            insn(3, Flow::Next, 27), // hoisted code of a later line
            insn(4, Flow::Jump(7), 0),
            insn(5, Flow::Stop, 0),
            insn(6, Flow::Branch(10), 25), // the anchor
            insn(7, Flow::Next, 27),
            insn(8, Flow::Stop, 27),
            insn(10, Flow::Stop, 26),
        ]);
        let found = cfg.bypasses(&[3], 25, 25);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].from, found[0].to), (1, 4));
        assert!(found[0].servable.as_ref().unwrap_err().contains("conditional jump"), "{found:?}");
        let found = cfg2.bypasses(&[6], 25, 25);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].from, found[0].to), (4, 7));
        assert_eq!(found[0].servable, Err("code of line 27 runs before it on that path".to_string()));
    }

    #[test]
    fn code_that_may_take_a_jump_table_is_not_judged() {
        // The waitpid path's jump is conditional, its other path takes a
        // jump table, which may lead to the region's location.
        let mut code = threaded();
        code[4].flow = Flow::Branch(7);
        code[5].flow = Flow::Indirect;
        assert_eq!(Cfg::new(code).bypasses(&[6], 25, 25), vec![]);
    }

    #[test]
    fn decoding_finds_jumps_and_the_functions_end() {
        // test eax,eax; jle +2; jmp +0; ret; jmp rax
        let bytes = [0x85, 0xc0, 0x7e, 0x02, 0xeb, 0x00, 0xc3, 0xff, 0xe0];
        let code = decode(&bytes, 0x100, |a| (0x100..0x109).contains(&a), |_| Some(1));
        let flows: Vec<Flow> = code.iter().map(|i| i.flow).collect();
        assert_eq!(flows, [Flow::Next, Flow::Branch(0x106), Flow::Jump(0x106), Flow::Stop, Flow::Indirect]);
    }

    #[test]
    fn cycles_are_the_loops_of_the_kept_code_only() {
        // 0 -> 1 -> 2 -> 3 -> 1 (a loop), 3 -> 4 -> 5 -> 4 (a loop), 5 -> 6 (end).
        let cfg = Cfg::new(vec![
            insn(0, Flow::Next, 1),
            insn(1, Flow::Next, 1),
            insn(2, Flow::Next, 1),
            insn(3, Flow::Branch(1), 1),
            insn(4, Flow::Next, 1),
            insn(5, Flow::Branch(4), 1),
            insn(6, Flow::Stop, 1),
        ]);
        let all = cfg.cycles(|_| true);
        assert_eq!(all[0], None);
        assert!(all[1].is_some() && all[1] == all[2] && all[2] == all[3]);
        assert!(all[4].is_some() && all[4] == all[5] && all[4] != all[1]);
        assert_eq!(all[6], None);
        // Without instruction 2 the first loop is no loop.
        let cut = cfg.cycles(|n| n != 2);
        assert_eq!(&cut[..4], &[None, None, None, None]);
        assert!(cut[4].is_some());
        // What 1 reaches without entering 4, and what reaches 4 without passing 1.
        let reach = cfg.reach(&[1], |n| n == 4).unwrap();
        assert_eq!(reach, [false, true, true, true, false, false, false]);
        let reaching = cfg.reaching(&[4], |n| n == 1);
        assert_eq!(reaching, [false, false, true, true, true, true, false]);
    }
}
