"""quick_init: the faster __init__ of the records made per task behaves exactly
as the one dataclasses writes."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from datetime import UTC, datetime

import pytest

from tenure.frozen import quick_init
from tenure.store.types import Completion, NewTask, PreparedTask
from tenure.task import Lease, Status, Task
from tenure.worker.runner import Succeeded

QUICK = [Task, Lease, NewTask, PreparedTask, Completion, Succeeded]


def _written_by_dataclasses(cls: type) -> inspect.Signature:
    """The signature dataclasses gives a twin of ``cls`` (same fields, same
    defaults), the sentinel of a default factory read as the factory."""
    twin = dataclass(frozen=True)(
        type(
            cls.__name__,
            (),
            {
                "__annotations__": {f.name: f.type for f in dataclasses.fields(cls)},
                **{f.name: _field_copy(f) for f in dataclasses.fields(cls)},
            },
        )
    )
    return inspect.signature(twin.__init__)


def _field_copy(original: dataclasses.Field[object]) -> object:
    if original.default is not dataclasses.MISSING:
        return original.default
    if original.default_factory is not dataclasses.MISSING:
        return field(default_factory=original.default_factory)
    return field()


@pytest.mark.parametrize("cls", QUICK, ids=lambda cls: cls.__name__)
def test_the_signature_is_the_one_dataclasses_writes(cls: type) -> None:
    assert cls.__init__.__code__.co_filename == "<string>"  # replaced, not the original
    assert cls.__init__.__module__ == cls.__module__
    ours = inspect.signature(cls.__init__).parameters
    theirs = _written_by_dataclasses(cls).parameters
    assert list(ours) == list(theirs)
    for name, parameter in theirs.items():
        assert ours[name].kind is parameter.kind
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if name in fields and fields[name].default_factory is dataclasses.MISSING:
            assert ours[name].default is parameter.default


@pytest.mark.parametrize("cls", QUICK, ids=lambda cls: cls.__name__)
def test_each_field_lands_in_its_own_slot(cls: type) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    given = [object() for _ in names]
    made = cls(*given)
    assert all(getattr(made, name) is value for name, value in zip(names, given, strict=True))


def test_a_task_is_the_same_given_by_position_or_by_name() -> None:
    at = datetime(2026, 1, 2, tzinfo=UTC)
    values = {f.name: f"v-{f.name}" for f in dataclasses.fields(Task)}
    values.update(status=Status.DONE, tags=frozenset({"a"}), created_at=at, record_ver=7)
    by_name = Task(**values)
    by_position = Task(*values.values())
    assert by_name == by_position
    assert dataclasses.asdict(by_name) == values
    assert hash(by_name) == hash(by_position)
    assert pickle.loads(pickle.dumps(by_name)) == by_name  # as a process pool sends it
    assert dataclasses.replace(by_name, topic="other").topic == "other"


def test_defaults_and_factories_are_applied_each_time() -> None:
    first, second = Task("a", "t", "n", Status.PENDING), Task("b", "t", "n", Status.PENDING)
    assert first.tags == frozenset() and first.record_ver == 1 and first.sub_topic == "default"

    @quick_init
    @dataclass(frozen=True)
    class Holder:
        name: str
        items: list[int] = field(default_factory=list)

    one, two = Holder("x"), Holder("y")
    assert one.items == [] and one.items is not two.items
    assert Holder("z", [1]).items == [1]
    assert second.tags == frozenset()


def test_instances_stay_frozen() -> None:
    task = Task("a", "t", "n", Status.PENDING)
    with pytest.raises(FrozenInstanceError):
        task.topic = "other"  # type: ignore[misc]


def test_post_init_still_runs() -> None:
    @quick_init
    @dataclass(frozen=True)
    class Positive:
        value: int

        def __post_init__(self) -> None:
            if self.value <= 0:
                raise ValueError("must be positive")

    assert Positive(3).value == 3
    with pytest.raises(ValueError, match="positive"):
        Positive(0)


def test_missing_and_unknown_arguments_are_refused_as_before() -> None:
    with pytest.raises(TypeError, match="missing"):
        Task("a", "t")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword"):
        Task("a", "t", "n", Status.PENDING, colour="red")  # type: ignore[call-arg]


def test_classes_it_would_copy_wrongly_are_refused() -> None:
    @dataclass
    class Mutable:
        value: int

    @dataclass(frozen=True)
    class KeywordOnly:
        value: int = field(kw_only=True)

    @dataclass(frozen=True)
    class NotInInit:
        value: int = field(default=0, init=False)

    @dataclass(frozen=True)
    class WithInitVar:
        value: int
        seed: InitVar[int]

    @dataclass(frozen=True, slots=True)
    class HidesASetter:
        x: int
        _set_x: int

    @dataclass(frozen=True)
    class HidesTheSetter:
        _set: int

    for cls in (Mutable, KeywordOnly, NotInInit, WithInitVar, HidesASetter, HidesTheSetter, int):
        with pytest.raises(TypeError):
            quick_init(cls)
