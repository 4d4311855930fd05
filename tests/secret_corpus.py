"""A labelled corpus of planted secrets: each kind the scrubber must catch, and where it may turn up.

Every value is made up for these tests (AWS's own documentation examples, random strings in the
providers' formats); none grants access to anything. `PLANTED` maps a redaction kind to values of
that kind; `CONTEXTS` are the ways a secret reaches a transcript or a reply; `code_heavy_text` is
an ordinary session's worth of code, for counting false positives.
"""

from __future__ import annotations

import base64
import json
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
                     ("mongodb+srv://admin:hunter2hunter2@cluster0.example.net/test", "hunter2hunter2")],
    "secret-assignment": [("DEPLOY_TOKEN=9f86d081884c7d659a2feaa0c55ad015", "9f86d081884c7d659a2feaa0c55ad015"),
                          ('SERVICE_SECRET: "Zr8PqT2wLx9mKv4N"', "Zr8PqT2wLx9mKv4N"),
                          ('db_password = "correct-horse-battery"', "correct-horse-battery"),
                          ("MY_API_KEY='q7Rw2Zt9Xv4Yb8Nc1Md5'", "q7Rw2Zt9Xv4Yb8Nc1Md5"),
                          ('"client_secret": "3f1b9c7d2e8a4f6b0c5d9e1a7b3c8d2f"', "3f1b9c7d2e8a4f6b0c5d9e1a7b3c8d2f")],
}


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
    for directory in ("eventlog", "projections", "playbook", "benchmarks", "hooks", "docs"):
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix in (".py", ".md", ".json", ".sh") and path.name != "scrub.py":
                parts.append(f"[tool result: {path.relative_to(ROOT)}]\n{path.read_text(encoding='utf-8')}")
    parts.append((ROOT / "README.md").read_text(encoding="utf-8"))
    for path in sorted((ROOT / "tests" / "fixtures" / "transcripts").glob("*.jsonl")):
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n\n".join(parts)
