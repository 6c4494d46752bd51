"""Random Blockly-like programs and random edits of them (benchmarks and tests).

A :class:`Program` is a list of stacks; a stack is a chain of :class:`Block`;
a block has dropdown fields, number inputs (shown as ``math_number`` shadows),
reporter inputs (a reporter block, or a shadow when empty) and statement
inputs holding chains.  Programs and edit scripts are drawn from a
``random.Random``, so a seed reproduces them; :func:`to_xml` writes the Blockly
XML a VEXcode client would send.  Everything here is iterative, so programs of
thousands of blocks nest as deep as they like.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

_DROPDOWNS = {
    "DIRECTION": ("fwd", "rev"),
    "TURNDIRECTION": ("left", "right"),
    "UNITS": ("mm", "inches"),
    "MOTOR": ("armmotor", "clawmotor"),
    "OP": ("LT", "GT", "EQ"),
}
# type: (dropdown fields, number inputs, reporter inputs, statement inputs)
_STATEMENTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "pg_drivetrain_drive_for": (("DIRECTION", "UNITS"), ("AMOUNT",), (), ()),
    "pg_drivetrain_turn_for": (("TURNDIRECTION",), ("AMOUNT",), (), ()),
    "iq_motion_spin_for": (("MOTOR", "DIRECTION"), ("AMOUNT",), (), ()),
    "pg_control_wait": ((), ("DURATION",), (), ()),
    "pg_control_repeat": ((), ("TIMES",), (), ("SUBSTACK",)),
    "pg_control_forever": ((), (), (), ("SUBSTACK",)),
    "pg_control_if_then": ((), (), ("CONDITION",), ("SUBSTACK",)),
    "pg_control_if_then_else": ((), (), ("CONDITION",), ("SUBSTACK", "SUBSTACK2")),
    "pg_control_repeat_until": ((), (), ("CONDITION",), ("SUBSTACK",)),
    "pg_drivetrain_drive_to": ((), ("X", "Y"), (), ()),
}
_REPORTERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "pg_sensing_drive_is_done": ((), (), (), ()),
    "pg_sensing_distance_found": ((), (), (), ()),
    "pg_sensing_distance": (("UNITS",), (), (), ()),
    "pg_operator_compare": (("OP",), ("A", "B"), (), ()),
}
_SIMPLE = [t for t, spec in _STATEMENTS.items() if not spec[3]]
_C_BLOCKS = [t for t, spec in _STATEMENTS.items() if spec[3]]
_HAT = "pg_events_when_started"


@dataclass
class Block:
    """One block; ``values`` maps number and reporter inputs to a number or a block."""

    type: str
    fields: dict[str, str] = field(default_factory=dict)
    values: dict[str, int | Block] = field(default_factory=dict)
    statements: dict[str, list[Block]] = field(default_factory=dict)


@dataclass
class Program:
    """Top-level stacks, each a chain of blocks."""

    stacks: list[list[Block]] = field(default_factory=list)

    def n_blocks(self) -> int:
        """Every block, nested ones included."""
        return sum(1 for _ in _walk(self))


def random_program(rng: random.Random, n_blocks: int, stray_stacks: float = 0.02) -> Program:
    """A program of exactly ``n_blocks`` blocks, grown one block at a time.

    :param stray_stacks: chance that a new block starts a top-level stack.
    """
    program = Program([[Block(_HAT)]] if n_blocks else [])
    growth = _Growth(list(program.stacks), [])
    for _ in range(n_blocks - 1):
        _insert_random_block(rng, program, stray_stacks, growth)
    return program


def edited(rng: random.Random, program: Program, n_edits: int) -> Program:
    """A copy of ``program`` after ``n_edits`` random edits.

    Edits: change a number, change a dropdown, insert a block, delete a block
    (its body goes with it), move a block and the chain below it.
    """
    result = copy.deepcopy(program)
    edits = (_change_number, _change_dropdown, _insert_edit, _delete_block, _move_chain)
    for _ in range(n_edits):
        rng.choice(edits)(rng, result)
    return result


def to_xml(program: Program, rng: random.Random | None = None) -> str:
    """Blockly XML of the program (random block ids when ``rng`` is given)."""
    ids = rng or random.Random(0)
    out = ['<xml xmlns="https://developers.google.com/blockly/xml">']
    work: list[str | tuple[list[Block], int, str]] = []
    for n, stack in enumerate(program.stacks):
        if stack:
            work.append((stack, 0, f' x="{40 + 20 * n}" y="{60 + 200 * n}"'))
    work.reverse()
    while work:
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
        else:
            work.extend(reversed(_block_parts(*item, ids)))
    out.append("</xml>")
    return "".join(out)


def _block_parts(
    chain: list[Block], index: int, position: str, ids: random.Random
) -> list[str | tuple[list[Block], int, str]]:
    """The XML of ``chain[index]`` as literal text and chains still to write."""
    block = chain[index]
    head = f'<block type={quoteattr(block.type)} id="b{ids.getrandbits(40):x}"{position}>'
    head += "".join(f'<field name="{k}">{v}</field>' for k, v in block.fields.items())
    parts: list[str | tuple[list[Block], int, str]] = [head]
    for name, value in block.values.items():
        parts.append(f'<value name="{name}">')
        if isinstance(value, Block):
            parts.append(([value], 0, ""))
        else:
            parts.append(f'<shadow type="math_number"><field name="NUM">{value}</field></shadow>')
        parts.append("</value>")
    for name, body in block.statements.items():
        parts.append(f'<statement name="{name}">')
        if body:
            parts.append((body, 0, ""))
        parts.append("</statement>")
    if index + 1 < len(chain):
        parts.extend(["<next>", (chain, index + 1, ""), "</next>"])
    parts.append("</block>")
    return parts


def _new_block(rng: random.Random, kind: str) -> Block:
    dropdowns, numbers, reporters, statements = (_STATEMENTS | _REPORTERS)[kind]
    block = Block(kind, {f: rng.choice(_DROPDOWNS[f]) for f in dropdowns})
    for name in numbers:
        block.values[name] = rng.randrange(1, 1000)
    for name in reporters:
        block.values[name] = 0
    block.statements = {name: [] for name in statements}
    return block


def _walk(program: Program) -> list[Block]:
    """Every block, in document order."""
    found: list[Block] = []
    todo = [b for stack in reversed(program.stacks) for b in reversed(stack)]
    while todo:
        block = todo.pop()
        found.append(block)
        inner = [v for v in block.values.values() if isinstance(v, Block)]
        inner += [b for body in block.statements.values() for b in body]
        todo.extend(reversed(inner))
    return found


def _chains(program: Program) -> list[list[Block]]:
    """Every chain a statement block can join: stacks and statement bodies."""
    chains = list(program.stacks)
    for block in _walk(program):
        chains.extend(block.statements.values())
    return chains


def _reporter_slots(program: Program) -> list[tuple[Block, str]]:
    return [slot for block in _walk(program) for slot in _empty_reporter_inputs(block)]


def _empty_reporter_inputs(block: Block) -> list[tuple[Block, str]]:
    """Inputs of ``block`` that could take a reporter and show a shadow now."""
    return [
        (block, name)
        for name, value in block.values.items()
        if not isinstance(value, Block) and (block.type in _REPORTERS or name in ("CONDITION", "AMOUNT", "X", "Y"))
    ]


@dataclass
class _Growth:
    """Where a new block can go: chains to join and empty reporter inputs."""

    chains: list[list[Block]]
    slots: list[tuple[Block, str]]

    @classmethod
    def of(cls, program: Program) -> _Growth:
        return cls(_chains(program), _reporter_slots(program))

    def add(self, block: Block) -> None:
        self.chains.extend(block.statements.values())
        self.slots.extend(_empty_reporter_inputs(block))


def _insert_random_block(rng: random.Random, program: Program, stray: float, growth: _Growth) -> None:
    if growth.slots and rng.random() < 0.15:
        at = rng.randrange(len(growth.slots))
        block, name = growth.slots[at]
        growth.slots[at] = growth.slots[-1]
        growth.slots.pop()
        block.values[name] = reporter = _new_block(rng, rng.choice(list(_REPORTERS)))
        growth.add(reporter)
        return
    kind = rng.choice(_C_BLOCKS) if rng.random() < 0.15 else rng.choice(_SIMPLE)
    block = _new_block(rng, kind)
    if rng.random() < stray or not program.stacks:
        program.stacks.append([block])
        growth.chains.append(program.stacks[-1])
    else:
        chain = rng.choice(growth.chains)
        chain.insert(rng.randint(1 if chain and chain[0].type == _HAT else 0, len(chain)), block)
    growth.add(block)  # after choosing its place: a block never joins its own body


def _insert_edit(rng: random.Random, program: Program) -> None:
    _insert_random_block(rng, program, 0.05, _Growth.of(program))


def _change_number(rng: random.Random, program: Program) -> None:
    numbers = [
        (b, k)
        for b in _walk(program)
        for k, v in b.values.items()
        if not isinstance(v, Block) and k not in ("CONDITION",)
    ]
    if numbers:
        block, name = rng.choice(numbers)
        block.values[name] = rng.randrange(1, 1000)


def _change_dropdown(rng: random.Random, program: Program) -> None:
    choices = [(b, k) for b in _walk(program) for k in b.fields]
    if choices:
        block, name = rng.choice(choices)
        block.fields[name] = rng.choice(_DROPDOWNS[name])


def _delete_block(rng: random.Random, program: Program) -> None:
    chains = [c for c in _chains(program) if any(b.type != _HAT for b in c)]
    if chains:
        chain = rng.choice(chains)
        chain.pop(rng.choice([i for i, b in enumerate(chain) if b.type != _HAT]))
    program.stacks[:] = [s for s in program.stacks if s]


def _move_chain(rng: random.Random, program: Program) -> None:
    chains = [c for c in _chains(program) if any(b.type != _HAT for b in c)]
    if not chains:
        return
    source = rng.choice(chains)
    start = rng.choice([i for i, b in enumerate(source) if b.type != _HAT])
    moved = source[start:]
    del source[start:]
    program.stacks[:] = [s for s in program.stacks if s]
    if rng.random() < 0.2 or not program.stacks:
        program.stacks.append(moved)
        return
    target = rng.choice(_chains(program))
    at = rng.randint(1 if target and target[0].type == _HAT else 0, len(target))
    target[at:at] = moved
