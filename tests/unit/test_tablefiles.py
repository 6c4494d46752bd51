"""RocksDB table files survive a clean stop and are dropped after an unclean one
(they may hold writes whose changelog records never reached the broker)."""

from __future__ import annotations

from pathlib import Path

from topology.tablefiles import MARKER, close_tables, open_tables


def _tables(root: Path) -> Path:
    tabledir = root / "v1" / "tables"
    (tabledir / "students-0.db").mkdir(parents=True)
    (tabledir / "students-0.db" / "000001.log").write_bytes(b"state")
    return tabledir


def test_a_fresh_data_directory_has_nothing_to_drop(tmp_path: Path) -> None:
    assert open_tables(tmp_path / "v1" / "tables") is False


def test_files_left_by_an_unclean_stop_are_dropped(tmp_path: Path) -> None:
    tabledir = _tables(tmp_path)
    assert open_tables(tabledir) is True
    assert not tabledir.exists()


def test_files_of_a_clean_stop_are_kept_until_the_next_unclean_one(tmp_path: Path) -> None:
    tabledir = _tables(tmp_path)
    close_tables(tabledir)
    assert (tabledir.parent / MARKER).exists()
    assert open_tables(tabledir) is False and (tabledir / "students-0.db" / "000001.log").exists()
    assert not (tabledir.parent / MARKER).exists()  # running: the files may run ahead again
    assert open_tables(tabledir) is True  # that run was killed: drop them
