# SPDX-License-Identifier: LGPL-2.1-or-later
# bash completion for memacctctl(1): its commands, options, the keys of
# create and set, stat items and top's sort orders; group paths from the
# daemon itself (memacctctl tree), when it answers.

_memacctctl_commands="create remove set show tree charge uncharge hold reclaim move client reset-peak watch
        info sessions import-cgroups prune rule top oci-hook cdi run region transfer evict-valuable help"

# The device regions the daemon has (memacctctl region list), memory first.
_memacctctl_regions() {
        "$1" --json region list 2>/dev/null | tr ',' '\n' | sed -n 's/^.*"name":"\([^"]*\)".*$/\1/p'
}

_memacctctl_groups() {
        local ctl=$1
        "$ctl" --json tree / 2>/dev/null | tr ',' '\n' | sed -n 's/^.*"path":"\([^"]*\)".*$/\1/p; s/^{"path":"\([^"]*\)"$/\1/p'
}

_memacctctl() {
        local cur prev cmd i
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        for ((i = 1; i < COMP_CWORD; i++)); do
                case ${COMP_WORDS[i]} in
                -*) ;;
                *) cmd=${COMP_WORDS[i]}; break ;;
                esac
        done
        case $prev in
        --socket | --output | --interposer | --config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --stat) COMPREPLY=($(compgen -W "anon file shmem kernel sock swap device other" -- "$cur")); return ;;
        -s) COMPREPLY=($(compgen -W "path current peak events" -- "$cur")); return ;;
        --region) COMPREPLY=($(compgen -W "$(_memacctctl_regions "${COMP_WORDS[0]}")" -- "$cur")); return ;;
        esac
        if [[ -z $cmd ]]; then
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--socket --bus --user --json --human-readable --help --version" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$_memacctctl_commands" -- "$cur"))
                fi
                return
        fi
        case $cmd in
        help) COMPREPLY=($(compgen -W "$_memacctctl_commands" -- "$cur")) ;;
        rule) [[ $prev == rule ]] && COMPREPLY=($(compgen -W "add remove list" -- "$cur")) ;;
        region)
                if [[ $prev == region ]]; then
                        COMPREPLY=($(compgen -W "add remove list probe" -- "$cur"))
                elif [[ $prev == remove ]]; then
                        COMPREPLY=($(compgen -W "$(_memacctctl_regions "${COMP_WORDS[0]}")" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "capacity=" -- "$cur"))
                        compopt -o nospace 2>/dev/null
                fi ;;
        oci-hook) [[ $prev == oci-hook ]] && COMPREPLY=($(compgen -W "create delete" -- "$cur")) ;;
        cdi)
                if [[ $prev == cdi ]]; then
                        COMPREPLY=($(compgen -W "generate" -- "$cur"))
                elif [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--output --interposer --config --socket" -- "$cur"))
                fi ;;
        run)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--group --name --keep-group --region --interposer" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "max= high= low= min=" -- "$cur"))
                        compopt -o nospace 2>/dev/null
                fi ;;
        create | set)
                if [[ $cur == /* || $prev == "$cmd" ]]; then
                        COMPREPLY=($(compgen -W "$(_memacctctl_groups "${COMP_WORDS[0]}")" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "max= high= low= min= owner=" -- "$cur"))
                        compopt -o nospace 2>/dev/null
                fi ;;
        *)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--exact --force --json --stat --region --ignore-low --reclaim-root --reclaimable --no-wait -P -p -r --help" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_memacctctl_groups "${COMP_WORDS[0]}")" -- "$cur"))
                fi ;;
        esac
}

complete -F _memacctctl memacctctl
