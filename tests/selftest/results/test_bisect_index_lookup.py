"""Issue 47 defect 14 (N15): bisect's version lookup (``pip index versions``) against an index that
refuses connections said "found no versions: ... No matching distribution found", the words of a
package that does not exist. It now says the index could not be reached; a package the index
answers for without versions still reads as absent. Real pip, against a port nothing listens on
and against a real PEP 503 index in a folder (file://)."""
import os

import pytest

from accel_regress.results.bisect import versions


@pytest.fixture
def pip_env(monkeypatch):
    for name in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_RETRIES", "1")
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "2")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return monkeypatch


def test_an_unreachable_index_is_not_an_absent_package(pip_env):
    pip_env.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    with pytest.raises(versions.IndexLookupError) as exc:
        versions.available("pytz", timeout_s=120)
    said = str(exc.value)
    assert "the package index could not be reached" in said and "not a package without versions" in said, said
    assert "found no versions" not in said


def test_an_index_that_answers_tells_absent_from_present(pip_env, tmp_path):
    simple = tmp_path / "simple"
    (simple / "pytz").mkdir(parents=True)
    (simple / "index.html").write_text('<html><body><a href="pytz/">pytz</a></body></html>\n')
    (simple / "pytz" / "index.html").write_text(
        '<html><body><a href="pytz-2019.1-py2.py3-none-any.whl">pytz-2019.1-py2.py3-none-any.whl</a>'
        '<a href="pytz-2021.3-py2.py3-none-any.whl">pytz-2021.3-py2.py3-none-any.whl</a></body></html>\n')
    pip_env.setenv("PIP_INDEX_URL", simple.as_uri())
    assert sorted(versions.available("pytz", timeout_s=120)) == ["2019.1", "2021.3"]
    with pytest.raises(versions.IndexLookupError) as exc:
        versions.available("no-such-package-here", timeout_s=120)
    said = str(exc.value)
    assert "found no versions" in said and "could not be reached" not in said, said
