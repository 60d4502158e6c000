#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-introspect.py REFERENCE XML...

Every interface of REFERENCE (proto/org.memacct1.xml) must appear in at
least one of the XML documents (introspection data: `memacctd
--bus-introspect`, `busctl introspect --xml-interface`), and wherever it
appears, with exactly the same methods, signals, properties, arguments
(type, name, direction), access and annotations, in the same order;
comments and whitespace do not count. Prints what differs; exit status 0
when nothing does.
"""

import sys
import xml.etree.ElementTree as ET


def member(e):
    """A comparable description of a method, signal or property."""
    args = [(a.get('type'), a.get('name'), a.get('direction', 'in' if e.tag == 'method' else None))
            for a in e.findall('arg')]
    notes = [(a.get('name'), a.get('value')) for a in e.findall('annotation')]
    return (e.tag, e.get('name'), e.get('type'), e.get('access'), tuple(args), tuple(notes))


def interfaces(path):
    root = ET.parse(path).getroot()
    return {i.get('name'): [member(m) for m in i if m.tag in ('method', 'signal', 'property')]
            for i in root.iter('interface')}


def main():
    reference = interfaces(sys.argv[1])
    failed = 0
    documents = {path: interfaces(path) for path in sys.argv[2:]}
    for name in reference:
        if not any(name in found for found in documents.values()):
            print(f'interface {name} is in none of {", ".join(documents)}')
            failed += 1
    for path, found in documents.items():
        for name, members in reference.items():
            if name not in found:
                continue
            if found[name] != members:
                failed += 1
                print(f'{path}: interface {name} differs from {sys.argv[1]}:')
                want, got = set(members), set(found[name])
                for m in members:
                    if m not in got:
                        print(f'  missing or different: {m}')
                for m in found[name]:
                    if m not in want:
                        print(f'  unexpected: {m}')
                if want == got:
                    print('  (the same members in another order)')
    if not reference:
        print(f'{sys.argv[1]}: no interface')
        failed += 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
