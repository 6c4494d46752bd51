from array import array

def tree_distance(
    codes1: array[int],
    lml1: array[int],
    keyroots1: array[int],
    codes2: array[int],
    lml2: array[int],
    keyroots2: array[int],
) -> int: ...
