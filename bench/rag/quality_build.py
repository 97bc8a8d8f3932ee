"""Builds ``bench/rag/quality_data``, the retrieval-quality set of part (d), in the BEIR layout.

The passages are the docstrings of 322 functions, classes and methods of the Python standard
library as this interpreter ships them (``inspect.getdoc``), one passage each, titled with the
qualified name: file and directory operations, iterator tools, strings, containers, numbers,
statistics, randomness, JSON, regular expressions, time, text wrapping, heaps, hashing,
subprocesses, serialisation and URLs. Many are near neighbours (``os.remove`` and
``os.unlink``, ``re.match`` and ``re.search``, ``json.dump`` and ``json.dumps``), the
distractors a question must get past.

The queries and their judgments (:data:`QUERIES`) were written by hand after reading every
passage: 2 for a passage that answers the question, 1 for one that answers part of it or
gives a workable alternative; every other passage is not relevant. Questions paraphrase the
need the way a user asks it; a few use the API's own words, so that full-text and vector
search differ.

Run ``python -m bench.rag.quality_build [DIR]`` to rebuild (default: the committed directory):
it writes ``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``, ``provenance.tsv`` (the file
each passage came from) and ``LICENSE-PSF.txt`` (the licence the PSF licence requires to be
kept with copies). Docstrings change between Python versions; the committed set was built with
CPython 3.11.7.
"""

from __future__ import annotations

import argparse
import builtins
import importlib
import inspect
import json
import platform
import shutil
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["NAMES", "QUERIES", "build"]

DEFAULT_DIR = Path(__file__).resolve().parent / "quality_data"

NAMES = (  # noqa: SIM905 - a block of names reads better than a list
    """
os.remove os.unlink os.rmdir os.removedirs shutil.rmtree os.mkdir os.makedirs os.rename
os.replace os.renames shutil.move shutil.copy shutil.copy2 shutil.copyfile shutil.copytree
shutil.copymode shutil.copystat os.listdir os.scandir os.walk glob.glob glob.iglob
fnmatch.fnmatch fnmatch.filter os.path.exists os.path.isfile os.path.isdir os.path.getsize
os.path.getmtime os.path.join os.path.split os.path.splitext os.path.basename os.path.dirname
os.path.abspath os.path.realpath os.path.expanduser os.path.expandvars os.path.relpath
os.path.commonpath os.path.normpath shutil.disk_usage shutil.which os.chmod os.stat os.getcwd
os.chdir os.symlink os.link os.readlink os.access os.getenv os.cpu_count os.getpid os.kill
os.urandom os.get_terminal_size shutil.make_archive shutil.unpack_archive
tempfile.mkstemp tempfile.mkdtemp tempfile.TemporaryFile tempfile.NamedTemporaryFile
tempfile.TemporaryDirectory tempfile.gettempdir
itertools.chain itertools.chain.from_iterable itertools.groupby itertools.islice
itertools.permutations itertools.combinations itertools.combinations_with_replacement
itertools.product itertools.accumulate itertools.zip_longest itertools.cycle itertools.repeat
itertools.count itertools.tee itertools.starmap itertools.takewhile itertools.dropwhile
itertools.filterfalse itertools.compress itertools.pairwise
functools.reduce functools.partial functools.lru_cache functools.cache functools.wraps
functools.total_ordering functools.cmp_to_key functools.singledispatch
collections.Counter collections.Counter.most_common collections.Counter.elements
collections.Counter.subtract collections.defaultdict collections.OrderedDict
collections.OrderedDict.move_to_end collections.deque collections.deque.rotate
collections.deque.appendleft collections.namedtuple collections.ChainMap
str.split str.rsplit str.splitlines str.strip str.lstrip str.removeprefix str.removesuffix
str.replace str.join str.find str.index str.rfind str.count str.startswith str.endswith
str.center str.ljust str.zfill str.partition str.title str.capitalize str.casefold str.lower
str.isdigit str.isnumeric str.isdecimal str.isalpha str.isspace str.expandtabs str.translate
str.maketrans str.encode str.format
list.sort sorted list.reverse reversed list.insert list.pop list.remove list.extend
list.append list.index list.copy dict.get dict.setdefault dict.pop dict.popitem dict.update
dict.fromkeys set.union set.intersection set.difference set.symmetric_difference set.issubset
set.discard set.remove
enumerate zip map filter any all sum min max round abs divmod pow isinstance getattr setattr
hasattr print input range len id hash repr iter next
math.floor math.ceil math.trunc math.sqrt math.isqrt math.isclose math.gcd math.lcm
math.factorial math.comb math.perm math.log math.log10 math.log2 math.exp math.fsum math.prod
math.hypot math.dist math.isnan math.isinf math.copysign math.fmod math.modf math.radians
math.degrees
statistics.mean statistics.median statistics.median_low statistics.median_high
statistics.mode statistics.multimode statistics.stdev statistics.pstdev statistics.variance
statistics.pvariance statistics.quantiles statistics.harmonic_mean statistics.geometric_mean
statistics.correlation statistics.linear_regression
random.random random.randint random.randrange random.choice random.choices random.sample
random.shuffle random.uniform random.gauss random.seed
json.dumps json.loads json.dump json.load
re.match re.search re.fullmatch re.findall re.finditer re.sub re.subn re.split re.compile
re.escape
time.time time.sleep time.monotonic time.perf_counter time.process_time time.strftime
time.strptime time.localtime time.gmtime time.mktime
datetime.datetime.now datetime.datetime.utcnow datetime.datetime.fromtimestamp
datetime.datetime.fromisoformat datetime.datetime.strptime datetime.datetime.strftime
datetime.datetime.isoformat datetime.datetime.timestamp datetime.date.today
datetime.timedelta.total_seconds datetime.datetime.astimezone
textwrap.wrap textwrap.fill textwrap.dedent textwrap.indent textwrap.shorten
heapq.heappush heapq.heappop heapq.heapify heapq.heapreplace heapq.heappushpop heapq.nlargest
heapq.nsmallest heapq.merge
bisect.bisect_left bisect.bisect_right bisect.insort_left bisect.insort_right
hashlib.pbkdf2_hmac hashlib.file_digest hmac.compare_digest hmac.new secrets.token_hex
secrets.token_urlsafe secrets.choice base64.b64encode base64.b64decode base64.urlsafe_b64encode
subprocess.run subprocess.check_output subprocess.check_call subprocess.call
subprocess.getoutput
copy.copy copy.deepcopy pickle.dumps pickle.loads
gzip.open gzip.compress zipfile.is_zipfile
urllib.parse.quote urllib.parse.unquote urllib.parse.urlencode urllib.parse.urlparse
urllib.parse.urljoin urllib.parse.parse_qs
operator.itemgetter operator.attrgetter operator.methodcaller
"""
).split()

# (question, {passage id: grade}); 2 answers it, 1 answers part of it or is an alternative.
QUERIES: list[tuple[str, dict[str, int]]] = [
    ("How do I delete a folder and everything inside it?", {"shutil.rmtree": 2}),
    ("remove an empty directory", {"os.rmdir": 2, "os.removedirs": 1}),
    (
        "create nested directories including missing parents, no error if it already exists",
        {"os.makedirs": 2},
    ),
    ("rename a file and overwrite the target if it exists", {"os.replace": 2, "os.rename": 1}),
    ("move a file to another filesystem like the mv command", {"shutil.move": 2}),
    (
        "copy a file keeping its timestamps and permissions",
        {"shutil.copy2": 2, "shutil.copystat": 1},
    ),
    ("copy an entire directory tree but skip some files", {"shutil.copytree": 2}),
    (
        "Which function lists the files in a folder, and does it include . and ..?",
        {"os.listdir": 2, "os.scandir": 1},
    ),
    (
        "go through all subdirectories recursively and get the file names in each one",
        {"os.walk": 2},
    ),
    (
        "find all files matching *.py in a folder and its subfolders",
        {"glob.glob": 2, "glob.iglob": 2},
    ),
    (
        "check whether a file name matches a shell wildcard pattern",
        {"fnmatch.fnmatch": 2, "fnmatch.filter": 1},
    ),
    ("get the file extension from a path", {"os.path.splitext": 2}),
    ("What happens when joining paths and one part is absolute?", {"os.path.join": 2}),
    (
        "resolve symlinks to get the real location of a file",
        {"os.path.realpath": 2, "os.readlink": 1},
    ),
    ("replace ~ with the user's home directory in a path", {"os.path.expanduser": 2}),
    ("how much free space is left on the disk", {"shutil.disk_usage": 2}),
    ("find where an executable program is installed on the PATH", {"shutil.which": 2}),
    ("create a zip or tar archive of a directory", {"shutil.make_archive": 2}),
    ("extract a .tar.gz file into a folder", {"shutil.unpack_archive": 2}),
    (
        "scratch directory that is cleaned up automatically when the with block ends",
        {"tempfile.TemporaryDirectory": 2, "tempfile.mkdtemp": 1},
    ),
    (
        "temporary file that has a visible name on disk so another program can open it",
        {"tempfile.NamedTemporaryFile": 2, "tempfile.mkstemp": 1},
    ),
    ("number of processors on the machine", {"os.cpu_count": 2}),
    ("read an environment variable with a fallback value", {"os.getenv": 2}),
    (
        "generate cryptographically secure random bytes",
        {"os.urandom": 2, "secrets.token_hex": 1},
    ),
    (
        "flatten a list of lists into one sequence",
        {"itertools.chain.from_iterable": 2, "itertools.chain": 2},
    ),
    ("group consecutive items that share the same key", {"itertools.groupby": 2}),
    (
        "take only the first n items of a generator without building a list",
        {"itertools.islice": 2},
    ),
    ("all possible orderings of the elements", {"itertools.permutations": 2}),
    ("every combination of items from several lists, like nested loops", {"itertools.product": 2}),
    ("running total of a list of numbers", {"itertools.accumulate": 2}),
    (
        "zip lists of unequal length padding the shorter one",
        {"itertools.zip_longest": 2, "zip": 1},
    ),
    ("consecutive overlapping pairs from a sequence", {"itertools.pairwise": 2}),
    (
        "remember a function's results so repeated calls with the same arguments are fast",
        {"functools.lru_cache": 2, "functools.cache": 2},
    ),
    (
        "keep the original function name and docstring when writing a decorator",
        {"functools.wraps": 2},
    ),
    ("fix some arguments of a function to make a new callable", {"functools.partial": 2}),
    ("sort using an old-style comparison function", {"functools.cmp_to_key": 2}),
    (
        "count how many times each word appears",
        {"collections.Counter": 2, "collections.Counter.most_common": 1},
    ),
    (
        "dictionary that supplies a default value for missing keys",
        {"collections.defaultdict": 2, "dict.setdefault": 1, "dict.get": 1},
    ),
    (
        "queue with fast appends and pops at both ends",
        {"collections.deque": 2, "collections.deque.appendleft": 1},
    ),
    ("tuple whose fields can be accessed by name", {"collections.namedtuple": 2}),
    ("look up a key across several dictionaries in order", {"collections.ChainMap": 2}),
    (
        "split a string only at the last occurrence of a separator",
        {"str.rsplit": 2, "str.partition": 1},
    ),
    ("strip a known prefix from a string", {"str.removeprefix": 2}),
    ("pad a number with leading zeros", {"str.zfill": 2}),
    (
        "compare strings ignoring case, including special letters like the German sharp s",
        {"str.casefold": 2, "str.lower": 1},
    ),
    (
        "difference between find and index when the substring is missing",
        {"str.find": 2, "str.index": 2},
    ),
    (
        "delete certain characters from a string using a mapping table",
        {"str.translate": 2, "str.maketrans": 2},
    ),
    ("Is sorting stable in Python?", {"list.sort": 2, "sorted": 1}),
    ("remove a dictionary key and get its value back", {"dict.pop": 2, "dict.popitem": 1}),
    (
        "remove an element from a set without an error if it is not there",
        {"set.discard": 2, "set.remove": 1},
    ),
    ("loop over a list with the position of each item", {"enumerate": 2}),
    ("make zip raise an error when the inputs have different lengths", {"zip": 2}),
    ("check whether at least one element of a list is true", {"any": 2}),
    ("modular exponentiation: raise to a power modulo a number", {"pow": 2}),
    ("integer quotient and remainder at the same time", {"divmod": 2}),
    ("compare two floating point numbers with a tolerance", {"math.isclose": 2}),
    (
        "how many ways to pick k items out of n, binomial coefficient",
        {"math.comb": 2, "math.perm": 1},
    ),
    ("add up floats without accumulating rounding error", {"math.fsum": 2}),
    ("Euclidean distance between two points", {"math.dist": 2, "math.hypot": 1}),
    ("round a number down to the nearest integer", {"math.floor": 2, "math.trunc": 1}),
    (
        "sample standard deviation of a list of numbers",
        {"statistics.stdev": 2, "statistics.variance": 1},
    ),
    ("average speed of a trip driven at different speeds", {"statistics.harmonic_mean": 2}),
    ("percentiles and quartiles of a dataset", {"statistics.quantiles": 2}),
    (
        "most frequent value in a list",
        {
            "statistics.mode": 2,
            "statistics.multimode": 2,
            "collections.Counter.most_common": 1,
        },
    ),
    ("fit a straight line to x and y data", {"statistics.linear_regression": 2}),
    ("pick k random items without repeats", {"random.sample": 2, "random.choices": 1}),
    ("weighted random selection with replacement", {"random.choices": 2}),
    (
        "random whole number between two values, both ends included",
        {"random.randint": 2, "random.randrange": 1},
    ),
    ("pretty-print JSON with indentation and sorted keys", {"json.dumps": 2, "json.dump": 2}),
    ("parse JSON numbers with decimals as Decimal", {"json.loads": 2, "json.load": 1}),
    ("difference between re.match and re.search", {"re.match": 2, "re.search": 2}),
    (
        "replace text matching a regex and know how many replacements were made",
        {"re.subn": 2, "re.sub": 1},
    ),
    ("make user input safe to put inside a regular expression", {"re.escape": 2}),
    (
        "measure elapsed time of some code for benchmarking",
        {"time.perf_counter": 2, "time.monotonic": 1},
    ),
    (
        "format a date as a year-month-day string",
        {"time.strftime": 2, "datetime.datetime.strftime": 1},
    ),
    ("turn an ISO 8601 string into a datetime object", {"datetime.datetime.fromisoformat": 2}),
    ("pause the program for half a second", {"time.sleep": 2}),
    ("remove the common indentation from a triple-quoted string", {"textwrap.dedent": 2}),
    ("cut long text to a width and end it with a placeholder", {"textwrap.shorten": 2}),
    ("get the 3 biggest values from a list efficiently", {"heapq.nlargest": 2}),
    ("combine several already-sorted lists without loading them all", {"heapq.merge": 2}),
    (
        "insert into a sorted list and keep it sorted",
        {"bisect.insort_right": 2, "bisect.insort_left": 2},
    ),
    ("derive an encryption key from a password", {"hashlib.pbkdf2_hmac": 2}),
    ("compare secret tokens safely against timing attacks", {"hmac.compare_digest": 2}),
    (
        "random token to put in a password reset link",
        {"secrets.token_urlsafe": 2, "secrets.token_hex": 1},
    ),
    (
        "base64 encoding safe for URLs and file names",
        {"base64.urlsafe_b64encode": 2, "base64.b64encode": 1},
    ),
    (
        "run a shell command and capture what it prints",
        {"subprocess.run": 2, "subprocess.check_output": 2, "subprocess.getoutput": 2},
    ),
    (
        "raise an exception if a command exits with a non-zero status",
        {"subprocess.check_call": 2, "subprocess.run": 1, "subprocess.check_output": 1},
    ),
    ("copy an object including all the objects nested inside it", {"copy.deepcopy": 2}),
    ("serialize a Python object to bytes", {"pickle.dumps": 2}),
    ("read a gzip-compressed file as text", {"gzip.open": 2}),
    (
        "percent-encode a string for use in a URL",
        {"urllib.parse.quote": 2, "urllib.parse.urlencode": 1},
    ),
    ("build a URL query string from a dictionary", {"urllib.parse.urlencode": 2}),
    ("sort records by one of their fields", {"operator.itemgetter": 2, "sorted": 1}),
    ("how wide is the terminal window", {"os.get_terminal_size": 2}),
    ("wait for the user to type a line at the keyboard", {"input": 2}),
    ("print without a newline at the end", {"print": 2}),
    (
        "check if a string only contains digits",
        {"str.isdigit": 2, "str.isdecimal": 1, "str.isnumeric": 1},
    ),
    ("what does os.path.commonpath return", {"os.path.commonpath": 2}),
    ("heapreplace versus heappushpop", {"heapq.heapreplace": 2, "heapq.heappushpop": 2}),
    ("json.loads object_pairs_hook", {"json.loads": 2, "json.load": 2}),
    ("itertools tee independent iterators", {"itertools.tee": 2}),
]


def _resolve(name: str) -> tuple[object, ModuleType | None]:
    """The object a dotted name refers to and the module it was found in (None: builtins)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module: ModuleType | None = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        rest = parts[cut:]
        break
    else:
        module, rest = None, parts
    found: object = builtins if module is None else module
    for part in rest:
        found = getattr(found, part)
    return found, module


def _source(found: object, module: ModuleType | None) -> str:
    """Where the passage's docstring is defined: the file of the module that defines the
    object (else of the module it was found in), relative to the interpreter's prefix."""
    module = inspect.getmodule(found) or module
    file = getattr(module, "__file__", None)
    if file is None:
        what = "builtins" if module is None else module.__name__
        return f"built-in module {what} (compiled into the interpreter)"
    return str(Path(file).resolve().relative_to(Path(sys.base_prefix).resolve()))


def build(directory: Path) -> tuple[int, int]:
    """Writes the set into ``directory``; the passages and queries written."""
    corpus = []
    provenance = ["corpus-id\tsource"]
    for name in NAMES:
        found, module = _resolve(name)
        doc = inspect.getdoc(found)
        if not doc or not doc.strip():
            raise SystemExit(f"{name} has no docstring in this Python")
        corpus.append({"_id": name, "title": name, "text": doc})
        provenance.append(f"{name}\t{_source(found, module)}")
    ids = {row["_id"] for row in corpus}
    if len(ids) != len(corpus):
        raise SystemExit("a passage is listed twice")
    queries = []
    qrels = ["query-id\tcorpus-id\tscore"]
    for number, (question, judged) in enumerate(QUERIES, 1):
        query_id = f"q{number:03d}"
        unknown = judged.keys() - ids
        if unknown:
            raise SystemExit(f"{query_id} judges passages not in the corpus: {sorted(unknown)}")
        queries.append({"_id": query_id, "text": question})
        qrels += [f"{query_id}\t{doc}\t{grade}" for doc, grade in judged.items()]
    (directory / "qrels").mkdir(parents=True, exist_ok=True)
    lines = {
        "corpus.jsonl": [json.dumps(row, ensure_ascii=False) for row in corpus],
        "queries.jsonl": [json.dumps(row, ensure_ascii=False) for row in queries],
        "qrels/test.tsv": qrels,
        "provenance.tsv": provenance,
    }
    for path, content in lines.items():
        (directory / path).write_text("\n".join(content) + "\n", encoding="utf-8")
    licence = Path(inspect.getfile(inspect)).with_name("LICENSE.txt")
    shutil.copyfile(licence, directory / "LICENSE-PSF.txt")
    return len(corpus), len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DIR)
    directory = parser.parse_args().directory
    passages, queries = build(directory)
    print(
        f"{passages} passages, {queries} queries written to {directory} "
        f"(CPython {platform.python_version()})"
    )


if __name__ == "__main__":
    main()
