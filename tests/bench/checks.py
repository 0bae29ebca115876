"""checks.py - the PASS:/FAIL: lines of the python bench tests (tests/bench/test_*.py, which
import it from their own folder) and their counts: check() prints one line per check; `passed`
and `failed` count them."""
passed = 0
failed = 0


def check(name, cond, detail=""):
    """One check: PASS: NAME, or FAIL: NAME: DETAIL where cond is false."""
    global passed, failed
    print(("PASS: " if cond else "FAIL: ") + name + ("" if cond else f": {detail}"))
    failed += not cond
    passed += bool(cond)
