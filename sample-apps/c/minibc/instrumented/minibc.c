/* minibc: a tiny bc-like calculator that compiles its input to byte code and
 * runs it on an operand stack. It carries the GNU bc 1.06 bug of the rdB
 * paper (section 6): a `for` loop with an empty condition must loop as if
 * the condition were true, but the translator emits no code for it, so the
 * BRANCH instruction finds an empty stack and the program crashes.
 *
 * Language: statements separated by `;` or newlines:
 *   x = expr   print expr   { stmts }   if (expr) stmt
 *   for (stmt; expr; stmt) stmt        break
 * variables a..z, integers, + - * / % < > == != and parentheses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "rdb.h"

enum op { PUSH, LOAD, STORE, ADD, SUB, MUL, DIV, MOD, LT, GT, EQ, NE, PRINT, BRANCH, JUMP, HALT };
static const char *const op_names[] = { "PUSH", "LOAD", "STORE", "ADD", "SUB", "MUL", "DIV", "MOD",
                                        "LT", "GT", "EQ", "NE", "PRINT", "BRANCH", "JUMP", "HALT" };

struct insn {
  enum op op;
  long arg;
};

static struct insn code[4096];
static int ncode;
static const char *src;
static long vars[26];
static int break_patch[64];
static int nbreak;

struct cell {
  long value;
  struct cell *below;
};
static struct cell *stack_top;
static int __rdb_hits;

static void die(const char *msg) {
  fprintf(stderr, "minibc: %s near `%.10s`\n", msg, src);
  exit(2);
}

static int emit(enum op op, long arg) {
  if (ncode == (int)(sizeof code / sizeof code[0]))
    die("program too long");
  code[ncode].op = op;
  code[ncode].arg = arg;
  return ncode++;
}

static void skip_space(void) {
  while (*src == ' ' || *src == '\t' || *src == '\n' || *src == '\r')
    src++;
}

static int accept(const char *tok) {
  skip_space();
  size_t n = strlen(tok);
  if (strncmp(src, tok, n) == 0) {
    src += n;
    return 1;
  }
  return 0;
}

static void expect(const char *tok) {
  if (!accept(tok))
    die("syntax error");
}

static void expr(void);

static void primary(void) {
  skip_space();
  if (isdigit((unsigned char)*src)) {
    emit(PUSH, strtol(src, (char **)&src, 10));
  } else if (*src >= 'a' && *src <= 'z') {
    emit(LOAD, *src++ - 'a');
  } else if (accept("(")) {
    expr();
    expect(")");
  } else {
    die("expected a number, a variable or `(`");
  }
}

static void term(void) {
  primary();
  for (;;) {
    if (accept("*")) { primary(); emit(MUL, 0); }
    else if (accept("/")) { primary(); emit(DIV, 0); }
    else if (accept("%")) { primary(); emit(MOD, 0); }
    else return;
  }
}

static void sum(void) {
  term();
  for (;;) {
    if (accept("+")) { term(); emit(ADD, 0); }
    else if (accept("-")) { term(); emit(SUB, 0); }
    else return;
  }
}

static void expr(void) {
  sum();
  if (accept("<")) { sum(); emit(LT, 0); }
  else if (accept(">")) { sum(); emit(GT, 0); }
  else if (accept("==")) { sum(); emit(EQ, 0); }
  else if (accept("!=")) { sum(); emit(NE, 0); }
}

static void statement(void);

static void simple(void) {
  skip_space();
  if (*src >= 'a' && *src <= 'z' && src[1] != 'r' && !(src[0] == 'i' && src[1] == 'f')) {
    int var = *src++ - 'a';
    expect("=");
    expr();
    emit(STORE, var);
  }
}

static void for_loop(void) {
  const char *start = src;
  expect("(");
  simple();
  expect(";");
  int cond = ncode;
  skip_space();
  if (*src != ';')
    expr();
  /* BUG (as in bc 1.06): an empty condition should emit PUSH 1 here. */
  expect(";");
  int branch = emit(BRANCH, -1);
  int skip_step = emit(JUMP, -1);
  int step = ncode;
  simple();
  expect(")");
  emit(JUMP, cond);
  code[skip_step].arg = ncode;
  int outer_breaks = nbreak;
  rdb_begin
  printf("rdb: for loop `%.*s` compiles to code %d..%d\n", (int)(src - start), start, cond, ncode);
  rdb_end
  statement();
  emit(JUMP, step);
  code[branch].arg = ncode;
  while (nbreak > outer_breaks)
    code[break_patch[--nbreak]].arg = ncode;
}

static void statement(void) {
  skip_space();
  if (accept("{")) {
    while (!accept("}")) {
      if (!*src)
        die("missing `}`");
      statement();
    }
  } else if (accept("print")) {
    expr();
    emit(PRINT, 0);
  } else if (accept("if")) {
    expect("(");
    expr();
    expect(")");
    int branch = emit(BRANCH, -1);
    statement();
    code[branch].arg = ncode;
  } else if (accept("for")) {
    for_loop();
  } else if (accept("break")) {
    if (nbreak == (int)(sizeof break_patch / sizeof break_patch[0]))
      die("too many breaks");
    break_patch[nbreak++] = emit(JUMP, -1);
  } else {
    simple();
  }
  accept(";");
}

static void push(long v) {
  struct cell *c = malloc(sizeof *c);
  c->value = v;
  c->below = stack_top;
  stack_top = c;
}

static long pop(void) {
  struct cell *c = stack_top;
  long v = c->value; /* crashes on an empty stack */
  stack_top = c->below;
  free(c);
  return v;
}

static void run(void) {
  int pc = 0;
  for (;;) {
    struct insn *in = &code[pc++];
    rdb_begin
    int depth = 0;
    for (struct cell *c = stack_top; c; c = c->below)
      depth++;
    if (in->op == BRANCH || __rdb_hits > 0) {
      __rdb_hits++;
      printf("rdb: pc=%d %s %ld stack depth %d\n", pc - 1, op_names[in->op], in->arg, depth);
    }
    rdb_end
    long a, b;
    switch (in->op) {
    case PUSH: push(in->arg); break;
    case LOAD: push(vars[in->arg]); break;
    case STORE: vars[in->arg] = pop(); break;
    case ADD: b = pop(); a = pop(); push(a + b); break;
    case SUB: b = pop(); a = pop(); push(a - b); break;
    case MUL: b = pop(); a = pop(); push(a * b); break;
    case DIV: b = pop(); a = pop(); if (!b) die("division by zero"); push(a / b); break;
    case MOD: b = pop(); a = pop(); if (!b) die("division by zero"); push(a % b); break;
    case LT: b = pop(); a = pop(); push(a < b); break;
    case GT: b = pop(); a = pop(); push(a > b); break;
    case EQ: b = pop(); a = pop(); push(a == b); break;
    case NE: b = pop(); a = pop(); push(a != b); break;
    case PRINT: printf("%ld\n", pop()); break;
    case BRANCH: if (!pop()) pc = (int)in->arg; break;
    case JUMP: pc = (int)in->arg; break;
    case HALT: return;
    }
  }
}

int main(int argc, char **argv) {
  static char buf[1 << 16];
  size_t n;
  if (argc > 1) {
    src = argv[1];
  } else {
    n = fread(buf, 1, sizeof buf - 1, stdin);
    buf[n] = 0;
    src = buf;
  }
  skip_space();
  while (*src)
    statement();
  emit(HALT, 0);
  run();
  return 0;
}
