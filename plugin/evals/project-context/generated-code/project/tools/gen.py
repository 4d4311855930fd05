"""Writes models_gen.py from schema.yaml."""
import sys

TYPES = {'int': 'int', 'str': 'str', 'str?': 'str | None = None'}


def main():
    lines = open('schema.yaml').read().splitlines()
    out = ['from dataclasses import dataclass', '', '']
    for line in lines:
        if not line.startswith(' '):
            out += ['@dataclass', f'class {line.rstrip(":")}:']
        else:
            name, kind = (p.strip() for p in line.split(':'))
            out.append(f'    {name}: {TYPES[kind]}')
    open('models_gen.py', 'w').write('\n'.join(out) + '\n')


if __name__ == '__main__':
    sys.exit(main())
