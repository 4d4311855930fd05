"""A labelled corpus of planted secrets: each kind the scrubber must catch, and where it may turn up.

Every value is made up for these tests (AWS's own documentation examples, random strings in the
providers' formats); none grants access to anything. `PLANTED` maps a redaction kind to values of
that kind; `CONTEXTS` are the ways a secret reaches a transcript or a reply; `code_heavy_text` is
an ordinary session's worth of code, for counting false positives. `NEAR_MISSES` look like secrets
and are not; `GENERATED` draws many random secrets of the shapes that are easy to miss, to measure
how many are caught.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _jwt() -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': '1234567890', 'name': 'Jo', 'iat': 1516239022})}" \
           ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"


PRIVATE_KEY_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n"
)
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}-----END RSA PRIVATE KEY-----"

# kind -> (the secret as it appears in the text, the secret's value that must not survive)
PLANTED: dict[str, list[tuple[str, str]]] = {
    "aws-access-key": [("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
                       ("ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A")],
    "aws-secret-key": [("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                       ('export AWS_SECRET_ACCESS_KEY="je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"',
                        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY")],
    "anthropic-api-key": [("sk-ant-api03-" + "Qm9kYXNoZWQ4c2VjcmV0LWtleS1mb3ItdGVzdHMtb25seQ_x7" + "AA" * 5,
                           "Qm9kYXNoZWQ4c2VjcmV0LWtleS1mb3ItdGVzdHMtb25seQ_x7"),
                          ("sk-ant-admin01-Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo",
                           "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo")],
    "openai-api-key": [("sk-proj-AbCdEfGhIjKlMnOpQrStT3BlbkFJUvWxYz0123456789AbCd",
                        "AbCdEfGhIjKlMnOpQrStT3BlbkFJUvWxYz0123456789AbCd"),
                       ("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",
                        "aB3dE5fG7hI9jK1lM3nOT3BlbkFJpQ5rS7tU9vW1xY3zA5bC")],
    "google-api-key": [("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY")],
    "github-token": [("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", "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"),
                     ("github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV",
                      "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV")],
    "gitlab-token": [("glpat-xZ3vR9kQ2mT7pL4sW8nB", "glpat-xZ3vR9kQ2mT7pL4sW8nB")],
    "slack-token": [("xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1",
                     "xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1")],
    "slack-webhook": [("https://hooks.slack.com/services/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",
                       "aJ3k9dLp2mQ8rT5vX7yZ1bN4")],
    "stripe-key": [("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
                   ("rk_test_51H8xYzAbCdEfGhIjKlMnOpQr", "rk_test_51H8xYzAbCdEfGhIjKlMnOpQr")],
    "private-key": [(PRIVATE_KEY, PRIVATE_KEY_BODY.split("\n")[1])],
    "jwt": [(_jwt(), _jwt().split(".")[2])],
    "url-password": [("postgres://app:Xk29vLmq77rt@db.internal:5432/app", "Xk29vLmq77rt"),
                     ("mongodb+srv://admin:hunter2hunter2@cluster0.example.net/test", "hunter2hunter2"),
                     ("postgresql://app:p4ss!w0rd$9@db.internal:5432/app", "p4ss!w0rd$9"),
                     ("redis://:Rz7kq2Lw9*x@cache.internal:6379/0", "Rz7kq2Lw9*x"),
                     ("amqp://guest:Gu3st&Pa55+x@rabbit.internal:5672/", "Gu3st&Pa55+x"),
                     ("https://deploy:Xy7(kq)Lz;m@git.example.com/team/repo.git", "Xy7(kq)Lz;m")],
    "npm-token": [("npm_Ty1LlnkmkQRfTWjZTsU7XaCD3UOhbHk9FV2C", "npm_Ty1LlnkmkQRfTWjZTsU7XaCD3UOhbHk9FV2C")],
    "secret-assignment": [("DEPLOY_TOKEN=9f86d081884c7d659a2feaa0c55ad015", "9f86d081884c7d659a2feaa0c55ad015"),
                          ('SERVICE_SECRET: "Zr8PqT2wLx9mKv4N"', "Zr8PqT2wLx9mKv4N"),
                          ('db_password = "correct-horse-battery"', "correct-horse-battery"),
                          ("MY_API_KEY='q7Rw2Zt9Xv4Yb8Nc1Md5'", "q7Rw2Zt9Xv4Yb8Nc1Md5"),
                          ('"client_secret": "3f1b9c7d2e8a4f6b0c5d9e1a7b3c8d2f"', "3f1b9c7d2e8a4f6b0c5d9e1a7b3c8d2f"),
                          ("export DB_PASSWORD=hunterWombatGlacier", "hunterWombatGlacier"),
                          ('APP_SECRET="f.?ub(Z=|O#_G<"', "f.?ub(Z=|O#_G<"),
                          ("api_secret: '&!11Sfv>6n-m[l=_dH99J'", "&!11Sfv>6n-m[l=_dH99J")],
}
# An AWS secret key said without its name, beside its key ID or the words aws or secret.
PLANTED["aws-secret-key"] += [("key pair AKIAJ7QWERTY2EXAMPLE M+kGuPNjUeBORiNmFt/KIJzl+tsP9zq8HCFkrHOD",
                               "M+kGuPNjUeBORiNmFt/KIJzl+tsP9zq8HCFkrHOD"),
                              ("the aws secret for ci is 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 (rotate it monthly)",
                               "YANZi8UPGx3RFVeh5O45lekP0W+0YCKMVLsRicHb")]

# Texts that look like secrets and are not: names, references, placeholders, digests, URLs without a password.
NEAR_MISSES: list[str] = [
    "npm_config_registry=https://registry.npmjs.org/", "echo $npm_package_version", "npm_lifecycle_event",
    "npm_" + "Ty1LlnkmkQRfTWjZTsU7XaCD3UOhbHk9FV2",  # 35 characters: not a token's shape
    "export DB_PASSWORD=$DB_PASSWORD", "export DB_PASSWORD=changeme", 'export DB_PASSWORD="${DB_PASSWORD:-}"',
    "export DB_PASSWORD_FILE=/run/secrets/db", "export PGPASSWORD=$(cat ~/.pgpass)", "PASSWORD_MIN_LENGTH=12",
    "connect(user=user, password=password)", "db.connect(password=db_password_value)",
    "DB_PASSWORD=os.environ['DB_PASSWORD']", "export API_KEY=your_api_key_here",
    'APP_SECRET="${APP_SECRET}"', "api_secret: '{{ vault_api_secret }}'", 'password: "Enter your password"',
    'client_secret: "/etc/app/client_secret.json"', 'APP_SECRET="<your secret>"', "password: '%(password)s'",
    "token: 'Bearer '", "secret_name: str = 'db-password'",
    "aws-sdk at commit 4fd4f2a9c1b0e2d3f4a5b6c7d8e9f0a1b2c3d4e5", "the aws client AbstractSingletonProxyFactoryBeanImpl123 is built",
    "aws role AmazonEC2ContainerRegistryPowerUser1 was attached",
    "checksum Qm9kYXNoZWQ4c2VjcmV0LWtleS1mb3ItdGVzdHM0 of the release tarball",
    "https://example.com:8080/path", "ssh://git@github.com/o/r.git", "postgresql://localhost:5432/app",
    "postgres://app:${DB_PASSWORD}@db/app", "postgres://app:$PGPASSWORD@db/app", "redis://cache:6379/0",
    "http://user@host.example.com/", "see http://localhost:8080/@user/profile",
]

_ALNUM = string.ascii_letters + string.digits
_BASE64 = _ALNUM + "/+"
_PUNCTUATION = "!#$%&()*+,-.;<=>?[]^_{|}~"


def _drawn(rng: random.Random, characters: str, low: int, high: int | None = None) -> str:
    return "".join(rng.choice(characters) for _ in range(rng.randint(low, high or low)))


def _npm(rng: random.Random) -> tuple[str, str]:
    token = "npm_" + _drawn(rng, _ALNUM, 36)
    return rng.choice([f"publish with {token} then", f"NPM_AUTH={token}", f"`{token}`", f"token {token}."]), token


def _shell_password(rng: random.Random) -> tuple[str, str]:
    password = _drawn(rng, string.ascii_letters, 8, 24)
    name = rng.choice(["DB_PASSWORD", "PGPASSWORD", "MYSQL_ROOT_PASSWORD", "REDIS_PASSWD", "ADMIN_PWD", "APP_SECRET"])
    return rng.choice([f"export {name}={password}", f"{name}={password} psql -h db", f"docker run -e {name}={password} app",
                       f"export {name.lower()}={password}"]), password


def _quoted(rng: random.Random) -> tuple[str, str]:
    quote = rng.choice("\"'")
    value = _drawn(rng, _ALNUM + _PUNCTUATION, 8, 32).replace(quote, "x")
    name = rng.choice(["APP_SECRET", "api_secret", "DB_PASSWORD", "client_secret", "password", "SESSION_SECRET"])
    return f"{name}{rng.choice(['=', ': ', ' = ', ':'])}{quote}{value}{quote}", value


def _aws_unnamed(rng: random.Random) -> tuple[str, str]:
    key_id, secret = "AKIA" + _drawn(rng, string.ascii_uppercase + "234567", 16), _drawn(rng, _BASE64, 40)
    return rng.choice([f"key pair {key_id} {secret}", f"the aws secret for ci is {secret} (rotate it)",
                       f"{key_id}\n{secret}\n", f"Secret: {secret}", f"creds {key_id} / {secret}"]), secret


def _url(rng: random.Random) -> tuple[str, str]:
    scheme = rng.choice(["postgresql", "postgres", "mysql", "redis", "rediss", "mongodb", "mongodb+srv", "amqp", "amqps",
                         "https", "http", "ftp", "smtp", "ldap"])
    user = "" if rng.random() < 0.2 else _drawn(rng, string.ascii_lowercase, 2, 8)
    password = _drawn(rng, _ALNUM + "!$&*()+,;=~-_.", 6, 24)
    return f"connect to {scheme}://{user}:{password}@db{rng.randint(1, 9)}.internal:5432/app now", password


GENERATED: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "npm token on its own": _npm, "password set in a shell, letters only": _shell_password,
    "quoted value after a secret's name": _quoted, "AWS secret key without its name": _aws_unnamed,
    "password in a URL of any scheme": _url,
}
"""Item -> a function drawing (text, the secret in it) from a random generator."""


def generated(item: str, count: int = 1000, seed: int = 7) -> list[tuple[str, str]]:
    """`count` random (text, secret) pairs of `item`, the same ones for the same seed."""
    rng = random.Random(f"{item}:{seed}")
    return [GENERATED[item](rng) for _ in range(count)]


def contexts(secret: str) -> dict[str, str]:
    """The planted `secret` as a user message, a tool output, a file dump and a model reply say it."""
    return {
        "user message": f"Deploy with this, it worked yesterday: {secret} (don't lose it)",
        "tool output": f"$ env | sort\nHOME=/home/dev\n{secret}\nPATH=/usr/bin\n",
        "file dump": f"# config.py\nimport os\n\nSETTINGS = {{\n    'debug': False,\n}}\n{secret}\n\ndef main():\n    pass\n",
        "model reply": json.dumps({"analysis": f"The session used {secret} to connect.",
                                   "operations": [{"type": "ADD", "section": "PROJECT CONTEXT",
                                                   "text": f"Credentials: {secret}"}]}),
    }


def all_planted() -> list[tuple[str, str, str]]:
    """(kind, text, value) for every planted secret."""
    return [(kind, text, value) for kind, items in PLANTED.items() for text, value in items]


def code_heavy_text() -> str:
    """An ordinary code-heavy session's text: the project's own source and docs, as a session reads them.

    The scrubber's own module and the tests (which plant secrets on purpose) are left out.
    """
    parts = []
    for directory in ("eventlog", "projections", "playbook", "benchmarks", "plugin/hooks", "docs"):
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix in (".py", ".md", ".json", ".sh") and path.name != "scrub.py":
                parts.append(f"[tool result: {path.relative_to(ROOT)}]\n{path.read_text(encoding='utf-8')}")
    parts.append((ROOT / "README.md").read_text(encoding="utf-8"))
    for path in sorted((ROOT / "tests" / "fixtures" / "transcripts").glob("*.jsonl")):
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n\n".join(parts)
